"""logphase: which startup phase an SGLang server is in, how long each took, and why it failed."""

from logphase.pipeline.diagnosis import Cause
from logphase.pipeline.engine import Engine, parse_bytes, parse_file, parse_text
from logphase.pipeline.events import Event, EventBase
from logphase.pipeline.phases import Phase
from logphase.pipeline.report import SCHEMA_VERSION, Report

__version__ = "0.1.0"

# The oracle is imported on first use: the command line should not pay for it on every start.
_LAZY = {
    "CheckResult": "logphase.faces.oracle",
    "Comparison": "logphase.faces.oracle",
    "Expectations": "logphase.faces.oracle",
    "check": "logphase.faces.oracle",
    "compare": "logphase.faces.oracle",
    "assert_startup": "logphase.testing",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'logphase' has no attribute {name!r}")


__all__ = [
    "SCHEMA_VERSION",
    "Cause",
    "CheckResult",
    "Comparison",
    "Engine",
    "Event",
    "EventBase",
    "Expectations",
    "Phase",
    "Report",
    "__version__",
    "assert_startup",
    "check",
    "compare",
    "parse_bytes",
    "parse_file",
    "parse_text",
]
