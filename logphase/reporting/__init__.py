"""Stage 6, reporting: the report (the JSON contract), how it is built from the machine's state,
and the merge of several logs of one deployment.
"""
