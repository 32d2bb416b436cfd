"""The pipeline (internal: import from ``logphase``): one incremental engine, one module per stage.

bytes -> lines.py -> envelope.py -> records.py / classify.py (messages.py, grammars/) -> events.py
      -> machine.py (phases.py) -> diagnosis.py -> report.py;  engine.py chains them.
"""
