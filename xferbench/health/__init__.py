"""The GPU health commands: check, fleet and validate, and their verdicts."""
