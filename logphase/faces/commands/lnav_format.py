"""Print an lnav log format (JSON) for SGLang's and vLLM's own log lines, derived from logphase's
grammars: timestamps, rank tags, levels, call sites and vLLM's process prefixes become lnav fields.

  logphase lnav-format > logphase.json && lnav -i logphase.json
  lnav server.log          (then :filter-in, or ;SELECT rank, log_level, log_body FROM sglang_log)
"""

from __future__ import annotations

import argparse
import sys

from logphase.faces.inputs import InputError

NAME = "lnav-format"
HELP = "print an lnav log format for SGLang's and vLLM's lines, derived from the grammars"
HELP_FORMATTER = argparse.RawDescriptionHelpFormatter


def add_arguments(p: argparse.ArgumentParser) -> None:
    from logphase.packs.registry import SERVERS

    p.add_argument("--server", choices=SERVERS, help="only this server's format (default: every server's)")


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.faces.fleet.lnav import lnav_formats
    from logphase.packs import packs

    chosen = [p for p in packs() if p.logger_rules and (args.server is None or p.name == args.server)]
    if not chosen:
        raise InputError(f"--server {args.server}: its pack names no logger prefix, so there is no format for it")
    sys.stdout.buffer.write(orjson.dumps(lnav_formats(chosen), option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.buffer.flush()
    return 0
