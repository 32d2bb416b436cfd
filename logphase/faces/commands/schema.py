"""Print the JSON schema of the report (``--json``), the events (``--events``), the follow records
(``follow --json``) and the report on several logs (``--merge``)."""

from __future__ import annotations

import argparse
import sys

from logphase.faces.exit_codes import EXIT_READY

NAME = "schema"
HELP = "print the JSON schema of the report, the events, the follow records and the merged report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    del p  # no options


def run(args: argparse.Namespace) -> int:
    import orjson
    from pydantic import TypeAdapter

    from logphase.faces.live.follow_records import FOLLOW_RECORD_ADAPTER
    from logphase.reporting.merge import MergedReport
    from logphase.reporting.report import Report
    from logphase.vocabulary.events import Event

    schema = {
        "report": Report.model_json_schema(),
        "event": TypeAdapter(Event).json_schema(),
        "follow_record": FOLLOW_RECORD_ADAPTER.json_schema(),
        # parse --merge --json; follow --merge --json ends with {"kind": "merged", "message", "report": this}
        # and tags every other record with the "source" log it came from
        "merged_report": MergedReport.model_json_schema(),
    }
    sys.stdout.buffer.write(orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return EXIT_READY
