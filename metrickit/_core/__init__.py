"""Shared building blocks: value rules, Harbor arithmetic, the frame schema, frame helpers and
child processes. Imports nothing else from metrickit but errors."""
