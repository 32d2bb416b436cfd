"""One module per CLI command (see logphase/faces/cli.py), and follow_merged.py, the mode
``follow --merge`` of the follow command."""
