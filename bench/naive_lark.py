"""The naive design, for comparison: run a Lark parser over every line of a log.

    python bench/naive_lark.py FILE

Each line (universal newlines, so tqdm's \\r redraws are lines too) has its ``[timestamp rank]``
prefix cut off with a regex and goes to logphase's own SGLang grammar (grammars/sglang/sglang.lark, the
same LALR parser logphase builds); lines it does not accept raise and are counted. No cheap
dispatch, no fast paths, no phase machine: this is the cost of "parse everything with the grammar".
Prints "<lines> lines, <parsed> parsed, <rejected> rejected".
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lark.exceptions import LarkError

from logphase.packs.grammars import parser

PREFIX = re.compile(r"\[[^\]]*\] ?")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sglang = parser("sglang")
    lines = parsed = rejected = 0
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        for line in f:
            lines += 1
            m = PREFIX.match(line)
            text = line[m.end() :] if m else line
            text = text.rstrip("\n")
            try:
                sglang.parse(text)
                parsed += 1
            except LarkError:
                rejected += 1
    print(f"{lines} lines, {parsed} parsed, {rejected} rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
