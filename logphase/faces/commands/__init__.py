"""One module per CLI command; see logphase/cli.py."""
