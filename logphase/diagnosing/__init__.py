"""Stage 4, diagnosing: what a failure event means. The cause table (the packs' signatures in
order), the error phrases read in a text, the phase a traceback's frames name, the assessment of an
event (cause, severity, phase) that the machine keeps, and the hint for a cause in a phase.
"""
