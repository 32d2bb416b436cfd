"""The root of logphase's own exceptions.

Everything logphase raises on purpose (input it cannot read, a saved report it cannot load, an
expectation it cannot understand, a start-up that failed under ``assert_startup``) derives from
:class:`LogphaseError`, so that a caller catches them all with one ``except``. Each also keeps the
built-in base it had (``ValueError``, ``AssertionError``), so existing handlers still catch it.
Programming errors (a wrong argument type) stay Python's own ``TypeError``.
"""

from __future__ import annotations


class LogphaseError(Exception):
    """Raised by logphase on purpose: the base of every exception it defines."""
