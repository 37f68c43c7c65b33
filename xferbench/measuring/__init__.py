"""Measuring: sweeps, worker processes, timing loops and the framework backends."""
