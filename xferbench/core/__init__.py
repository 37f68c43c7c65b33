"""The ground: the result file, the environment, and the vocabulary and arithmetic every other part shares."""
