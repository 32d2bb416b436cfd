"""Faces on a log being written: following it (records as they happen, a file by name or a pipe)
and its Prometheus metrics."""
