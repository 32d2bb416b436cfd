"""The faces on the engine (internal: import from ``logphase``, ``logphase.testing``): the command line
and its commands, live following, the test oracle, the text and the timeline picture."""
