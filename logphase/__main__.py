from logphase.faces.entry import entry_point

entry_point()
