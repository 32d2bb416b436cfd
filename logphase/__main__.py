from logphase.faces.cli import entry_point

entry_point()
