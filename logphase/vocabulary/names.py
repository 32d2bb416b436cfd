"""A file's name as logphase shows it, in every output (text, JSON, the page, metrics labels, the
one-line errors): a name is bytes, and what it holds must neither break an output nor write to the
terminal.

Python hands a name that is not UTF-8 over as text with lone surrogates (``os.fsdecode``), which no
UTF-8 output can carry (orjson, the page and Prometheus refuse them); a name may also hold a newline
(that would forge a line of the report: a second verdict), an escape sequence (it would drive the
terminal) or another control character. Each is shown escaped, as Python writes it in a string
literal (``\\xff``, ``\\n``, ``\\x1b``); any other character, a backslash included, is shown as is.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL; the line and paragraph separators (a line break to some terminals and
# to every str.splitlines); the bidirectional overrides and isolates, which reorder what follows them
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(m: re.Match[str]) -> str:
    char = m.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown_name(name: str) -> str:
    """``name`` with the bytes that are not UTF-8 and the characters that are no text shown
    escaped; a name without either is returned as it is (so showing a shown name changes nothing)."""
    if name.isprintable() and name.isascii():
        return name  # nearly every name: nothing to look at
    try:
        # the bytes os.fsdecode could not decode came back as lone surrogates: back to those bytes
        text = name.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
    except UnicodeEncodeError:
        text = name.encode("utf-8", errors="backslashreplace").decode("ascii")  # other lone surrogates
    return _UNSHOWN.sub(_escaped, text)
