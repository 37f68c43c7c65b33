"""The readers: tables, plots, reports and comparisons from result files; they never measure."""
