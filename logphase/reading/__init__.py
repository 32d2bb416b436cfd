"""Stage 2, reading: bytes -> logical lines, each with its envelope (the wrappers other programs put
around it, the server's prefix) and its time (one clock for every stamp). ``sniff.py`` tells a
log from a compressed log and from what is no log at all.
"""
