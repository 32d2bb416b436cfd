"""What every stage speaks: phases and their roles, the typed events, the values read from lines,
the causes of a failure, the servers' names, redaction of secrets, and logphase's exceptions.

Nothing here imports another stage: every stage above imports this one.
"""
