"""Computation on frames: Harbor aggregation, streaming, metrics, pass@k, statistics and
ranking."""
