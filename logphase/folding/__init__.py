"""Stage 5, folding: events -> runs, phases per rank, incidents and facts (the phase machine).
"""
