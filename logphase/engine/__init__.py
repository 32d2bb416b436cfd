"""Stage 7, engine: the one incremental reader that chains the stages, bytes in any chunking ->
report, and the whole-input readers every face uses.
"""
