"""What an input is, from its first bytes: a log (text), a compressed log (read through: rotated
logs are compressed), or something that is no log text at all (refused in one line, exit 2).

Binary is decided on the head of the text, robustly: NUL bytes are left out (a file truncated
while a process kept writing at its offset starts with NULs: copytruncate), and an input is binary
only when more than a third of what is left is control bytes or invalid UTF-8, so that a real log
with a few odd bytes is never refused.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import io
import lzma
import sys
import zlib
from typing import BinaryIO, cast

from logphase.vocabulary.errors import LogphaseError

# bytes looked at to tell text from binary (and read ahead for it)
SNIFF_BYTES = 64 * 1024
# share of control bytes and invalid UTF-8 above which the head is binary
BINARY_SHARE = 1 / 3

_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
# what else people pass by mistake, and what to say
_NOT_TEXT = (
    (b"\x7fELF", "an ELF executable"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a zip archive (unzip -p FILE | logphase parse -)"),
    (b"\xff\xfe", "UTF-16 text (iconv -f UTF-16 -t UTF-8 FILE | logphase parse -)"),
    (b"\xfe\xff", "UTF-16 text (iconv -f UTF-16 -t UTF-8 FILE | logphase parse -)"),
)
# bytes that are no text: C0 controls but tab, newline, form feed, carriage return, backspace, escape; DEL
_CONTROL = bytes(c for c in range(256) if (c < 0x20 and c not in b"\t\n\x0c\r\x08\x1b") or c == 0x7F)
_TEXT = bytes(c for c in range(256) if c not in _CONTROL)


class NotALog(LogphaseError, ValueError):
    """The input is no log text (binary, empty, undecodable): one line, for the user."""


def compression_of(head: bytes) -> str | None:
    """The compression the first bytes announce (gzip, bz2, xz, zstd), or None."""
    for magic, kind in _COMPRESSED:
        if head.startswith(magic) and (kind != "bz2" or head[3:4].isdigit()):
            return kind
    return None


def refuse_binary(head: bytes, source: str) -> None:
    """NotALog when ``head`` (the first bytes of the text) is no text. An empty head is left to
    the caller (which says the input is empty, or waits for more)."""
    for magic, what in _NOT_TEXT:
        if head.startswith(magic):
            raise NotALog(f"{source}: {what.replace('FILE', source)}, not a log")
    sample = head.replace(b"\x00", b"")
    if not sample:
        return  # only NULs so far (a truncated file's hole): what follows decides
    if len(head) >= SNIFF_BYTES:
        sample = sample[:-3] or sample  # more follows: the last character may be cut
    control = len(sample.translate(None, _TEXT))
    invalid = sample.decode("utf-8", errors="replace").count("\ufffd") - sample.decode("utf-8", errors="ignore").count("\ufffd")
    share = (control + invalid) / len(sample)
    if share > BINARY_SHARE:
        raise NotALog(f"{source}: binary data ({share:.0%} of its first {len(sample)} bytes are no text), not a log")


def log_stream(handle: BinaryIO, source: str) -> BinaryIO:
    """``handle`` as the bytes of a log: read through its compression, if any. NotALog when it is
    empty, binary, or compressed in a way this Python cannot read (with the command that can)."""
    head = read_ahead(handle, SNIFF_BYTES)
    if not head:
        raise NotALog(f"{source}: empty (0 bytes): no log to read")
    kind = compression_of(head)
    if kind is None:
        refuse_binary(head, source)
        return io.BufferedReader(_Rejoined(head, handle))
    stream = _decompressed(kind, cast("BinaryIO", _Rejoined(head, handle)), source)
    try:
        text = read_ahead(stream, SNIFF_BYTES)
    except (OSError, lzma.LZMAError, zlib.error, ValueError) as exc:
        raise NotALog(f"{source}: {kind} data that does not decompress: {exc}") from None
    if not text:
        raise NotALog(f"{source}: its {kind} data holds no log (empty, or cut before its first block)")
    refuse_binary(text, f"{source} ({kind})")
    return io.BufferedReader(_Rejoined(text, stream, source))


def read_ahead(handle: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes, fewer only at the end of the input (a pipe gives what it has)."""
    parts: list[bytes] = []
    got = 0
    # read1: a decompressor's read(n) drops what it decompressed when the stream ends cut short
    read = getattr(handle, "read1", handle.read)
    while got < size:
        try:
            part = read(size - got)
        except EOFError:
            break  # a compressed stream cut before its end marker: what it held is the input
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _decompressed(kind: str, raw: BinaryIO, source: str) -> BinaryIO:
    if kind == "gzip":
        return cast("BinaryIO", gzip.GzipFile(fileobj=raw, mode="rb"))
    if kind == "bz2":
        return cast("BinaryIO", bz2.BZ2File(raw, mode="rb"))
    if kind == "xz":
        return cast("BinaryIO", lzma.LZMAFile(raw, mode="rb"))
    for module in ("compression.zstd", "zstandard"):  # Python 3.14's, else the zstandard package
        try:
            zstd = importlib.import_module(module)
        except ImportError:
            continue
        if module == "zstandard":
            return zstd.ZstdDecompressor().stream_reader(raw)  # type: ignore[no-any-return]
        return zstd.ZstdFile(raw, mode="rb")  # type: ignore[no-any-return]
    raise NotALog(f"{source}: zstd-compressed, which this Python cannot read: zstd -dc {source} | logphase parse -")


class _Rejoined(io.RawIOBase):
    """The bytes read ahead, then the rest of the input. For a decompressed input (``source``
    given), a stream that stops before its end marker (a rotated file cut, or still being
    written) ends there; a corrupt one is a read error naming the input."""

    def __init__(self, head: bytes, rest: BinaryIO, source: str | None = None) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest
        self._read = getattr(rest, "read1", rest.read)  # see read_ahead
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        try:
            data = self._read(len(buffer))
        except EOFError:
            return 0  # cut before the end of the compressed stream: what there was is the log
        except (lzma.LZMAError, zlib.error, ValueError) as exc:
            if self._source is None:
                raise
            raise OSError(f"corrupt compressed data: {exc}") from None
        n = len(data)
        buffer[:n] = data
        return n

    def close(self) -> None:
        try:
            if self._rest is not sys.stdin.buffer:  # stdin stays open for whoever reads it next
                self._rest.close()
        finally:
            super().close()
