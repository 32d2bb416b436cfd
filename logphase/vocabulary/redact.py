"""Secrets out of everything logphase prints: each line's text is redacted where it enters the
engine (before any grammar sees it), so events (their ``raw`` text and fields), the report, its
configuration, the page, the metrics' labels and ``--events`` / ``--unrecognized`` all inherit it.

What is a secret: the value of a key whose name ends in a secret word (``api_key``,
``admin_api_key``, ``api_keys``, ``hf_token``, ``ssl_keyfile_password``, ``aws_secret_access_key``,
``X-Amz-Credential``, ``Authorization`` ...), written ``key=value``, ``key: value``, ``'key': value``
or ``--key value``; the user information of a URL (``http://user:***@host``); and tokens whose
shape gives them away (``hf_...``, ``sk-...``). Not secrets: a key only *containing* such a word
(``ds_heavy_token_num``, ``max_total_tokens``, ``ssl_keyfile``, a path), a tokenizer's
``mask_token``, a number under a ``token`` (SGLang's ``#full token: 1234``), a bare ``key: ...`` in
prose (a store's lookup key; ``?key=...`` is one), and empty values (``None``, ``''``, ``False``:
no secret was set). The secret becomes ``***``; the key, its quotes and the rest of the line are
kept, so the line still parses as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

REDACTED = "***"

# the last word of a key name that makes its value a secret (words split at _ - . and camelCase)
SECRET_WORDS = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "apikeys",
        "token",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "signature",
    }
)
# values that hold no secret: none set, a flag
_EMPTY = frozenset({"", "None", "none", "null", "False", "false", "True", "true", "[]", "{}", "''", '""', "0"})

# cheap tests first (most lines hold none of these words, and go on untouched): substrings of the
# lower-cased line, then a key ending in a secret word followed by its separator
_TRIGGERS = ("key", "token", "pass", "secret", "credential", "auth", "signature", "://", "hf_", "sk-")
_PAIR_HINT = re.compile(
    r"(?:keys?|token|pass\w*|secrets?|credentials?|auth\w*|signature)['\"]?\s*[=:]"
    r"|--[\w-]*(?:key|token|password|secret|credential|auth)\s"
)
# a value: quoted, a list or dict (kept as brackets around ***), an HTTP scheme and its token, or a word
_VALUE = re.compile(r"""'[^']*'|"[^"]*"|\[[^\]]*\]|\{[^}]*\}|(?:Bearer|Basic|Token)\s+[^\s,;'"]+|[^\s,;)}\]&'"]+""")
# what comes before a value: key=, key:, 'key':, "key"=, --key (then a space), --key= (not SGLang's
# statistics such as '#token: 3400'). Only the key and separator are matched, so that the pairs
# inside a value that is not secret (server_args={...}) are found too.
_HEAD = re.compile(r"(?<![\w.#-])(?P<dash>--)?(?P<q>['\"]?)(?P<key>[A-Za-z_][\w.-]*)(?P=q)(?:\s*[=:](?!=)\s*|(?(dash)\s+|(?!)))")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][\w+.-]*://)(?P<user>[^\s/@:'\"]*)(?P<colon>:?)(?P<secret>[^\s/@'\"]*)@")
_TOKEN_SHAPES = re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,})\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# a tokenizer's special tokens are no secrets (mask_token=151669, pad_token='<pad>')
_TOKENIZER_TOKENS = frozenset({"mask", "pad", "bos", "eos", "unk", "sep", "cls"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def is_secret_key(key: str) -> bool:
    """Whether a value under this name is a secret: its last word is one of SECRET_WORDS."""
    words = [w.lower() for w in re.split(r"[_\-.\s]+", _CAMEL.sub("_", key)) if w]
    if not words or words[-1] not in SECRET_WORDS:
        return False
    return not (words[-1] == "token" and len(words) > 1 and words[-2] in _TOKENIZER_TOKENS)


def _is_secret_value(key: str, value: str) -> bool:
    """A value that can hold a secret: not empty, not the option's own metavar (argparse's usage
    prints '[--api-key API_KEY]'), and under a 'token' not a number (SGLang's statistics print
    '#full token: 1234', a tokenizer's token ids are numbers; a secret is not)."""
    if value in _EMPTY or value == key.upper().replace("-", "_").replace(".", "_"):
        return False
    return not (key.lower().endswith("token") and _NUMBER.fullmatch(value))


def redact_text(text: str) -> str:
    """The text with every secret in it replaced by ``***`` (see the module's docstring)."""
    low = text.lower()
    if not _may_hold_a_secret(low):
        return text
    if "://" in text and "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    if _PAIR_HINT.search(low):
        text = _redact_pairs(text)
    if "hf_" in text or "sk-" in text:
        text = _TOKEN_SHAPES.sub(REDACTED, text)
    return text


def _may_hold_a_secret(low: str) -> bool:
    """Whether the lower-cased line holds one of _TRIGGERS (spelled out: twice as fast as any())."""
    return (
        "key" in low
        or "token" in low
        or "pass" in low
        or "secret" in low
        or "credential" in low
        or "auth" in low
        or "signature" in low
        or "://" in low
        or "hf_" in low
        or "sk-" in low
    )


def _userinfo(m: re.Match[str]) -> str:
    if m.group("colon"):  # user:password@ keeps the user
        return f"{m.group('scheme')}{m.group('user')}:{REDACTED}@"
    return f"{m.group('scheme')}{REDACTED}@"  # a lone user part is often the token itself


# every secret word holds one of these: where one occurs, a key may end (found with str.find, a
# scan of the text in C, where _HEAD.finditer tries its pattern at every position: 7 ms for a 64 KiB
# server_args dump, the bulk of reading one cut at the reader's limit)
_SECRET_STEMS = ("key", "token", "pass", "secret", "credential", "auth", "signature")


def _is_key_char(ch: str) -> bool:
    """A character of _HEAD's key: a word character as re's \\w has it (any script's letters and
    digits), a dot or a dash."""
    return ch.isalnum() or ch in "_.-"


def _secret_heads(text: str) -> Iterator[re.Match[str]]:
    """The matches of _HEAD whose key is a secret one, in order: those _HEAD.finditer gives, found
    from the secret words' places. A key is a run of key characters (its head starts where the run
    does, or at the quote before it); _HEAD's lookbehind keeps it from starting inside one."""
    low = text.lower()
    if len(low) != len(text):  # 'İ' lowers to two characters: the places would not be the text's
        yield from (m for m in _HEAD.finditer(text) if is_secret_key(m.group("key")))
        return
    places = sorted({at for stem in _SECRET_STEMS for at in _places(low, stem)})
    end = -1
    for start in _run_starts(text, places):
        if start < end:
            continue
        quoted = start - 1 if start > 0 and text[start - 1] in "'\"" else start
        head = _HEAD.match(text, quoted) or (_HEAD.match(text, start) if quoted != start else None)
        if head is not None and is_secret_key(head.group("key")):
            end = head.end()
            yield head


def _places(low: str, stem: str) -> Iterator[int]:
    at = low.find(stem)
    while at >= 0:
        yield at
        at = low.find(stem, at + len(stem))


def _run_starts(text: str, places: list[int]) -> list[int]:
    """Where the run of key characters holding each place (in order) starts, each once. Each
    character is looked at once: a run of 64 KiB of 'keykey...' would otherwise be walked back
    from each of its 21,000 places."""
    starts: list[int] = []
    run, known = 0, 0  # text[run:known] is one run of key characters (or empty)
    for at in places:
        start = at
        while start > known and _is_key_char(text[start - 1]):
            start -= 1
        if start == known and known > run:  # it reaches back into the run before
            start = run
        run, known = start, at
        if not starts or starts[-1] != start:
            starts.append(start)
    return starts


def _redact_pairs(text: str) -> str:
    out: list[str] = []
    done = 0  # text[:done] is in out
    for head in _secret_heads(text):
        key = head.group("key")
        if head.start() < done:
            continue
        if key.lower() in ("key", "keys") and "=" not in head.group():  # 'for key: x' names a lookup key
            continue
        value = _VALUE.match(text, head.end())
        if value is None or not _is_secret_value(head.group("key"), value.group()):
            continue
        out += [text[done : head.end()], _hidden(value.group())]
        done = value.end()
    return "".join(out) + text[done:] if out else text


def _hidden(value: str) -> str:
    """``***`` in place of the value, inside its quotes or a list's brackets (the line still
    parses as before), after its HTTP scheme (``Bearer ***``)."""
    if value[:1] in "'\"" and len(value) >= 2:
        return value[0] + (REDACTED if value[1:-1].strip() else "") + value[-1]
    if value[:1] == "[" and len(value) >= 2:  # a list of secrets: one quoted *** (still a Python literal)
        inner = value[1:-1].strip()
        quote = next((c for c in inner if c in "'\""), "")
        return f"[{quote}{REDACTED}{quote}]" if inner else value
    if value[:1] == "{":  # a dict of secrets: a quoted *** (a set of one would not read back)
        return f"'{REDACTED}'"
    scheme, space, _ = value.partition(" ")
    return f"{scheme} {REDACTED}" if space and scheme in ("Bearer", "Basic", "Token") else REDACTED


def redact_value(key: str, value: Any) -> Any:
    """A configuration value as it may be shown: ``***`` under a secret key (unless empty),
    else strings (also inside lists and dicts) with the secrets in them redacted."""
    if is_secret_key(key) and value not in (None, "", False, True, [], {}):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact_value("", v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(str(k), v) for k, v in value.items()}
    return value


def redact_args(args: dict[str, Any]) -> dict[str, Any]:
    """server_args with their secrets redacted (the line's text was already; this catches what a
    dump holds in a form the text patterns do not see, such as a nested dict)."""
    return {key: redact_value(key, value) for key, value in args.items()}


__all__ = ["REDACTED", "SECRET_WORDS", "is_secret_key", "redact_args", "redact_text", "redact_value"]
