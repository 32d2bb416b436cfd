"""logphase: which startup phase an SGLang server is in, how long each took, and why it failed."""

from logphase.diagnosis import Cause
from logphase.engine import Engine, parse_bytes, parse_file, parse_text
from logphase.events import Event, EventBase
from logphase.phases import Phase
from logphase.report import SCHEMA_VERSION, Report

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "Cause",
    "Engine",
    "Event",
    "EventBase",
    "Phase",
    "Report",
    "__version__",
    "parse_bytes",
    "parse_file",
    "parse_text",
]
