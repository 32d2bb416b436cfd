from logphase.faces.entry import command_line

command_line()
