"""What a user sees of the command line itself: usage errors are one line on stderr with exit 2
(as every other bad input), and the help keeps its examples as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.faces import cli
from logphase.faces.exit_codes import EXIT_USAGE

LOG = str(Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "tp1_success.log")

BAD_INVOCATIONS = [
    ([], "logphase: error: a command is needed"),
    (["--bogus"], "logphase: error: unrecognized arguments: --bogus"),
    (["nope"], "logphase: error: argument COMMAND: invalid choice: 'nope'"),
    (["parse"], "logphase parse: error: the following arguments are required"),
    (["parse", LOG, "--bogus"], "logphase parse: error: unrecognized arguments: --bogus"),
    (["parse", LOG, "-j", "0"], "logphase parse: error: argument --jobs/-j: must be at least 1"),
    (["parse", LOG, "--run", "x"], "logphase parse: error: argument --run"),
    (["follow", LOG, LOG, "--bogus"], "logphase follow: error: unrecognized arguments: --bogus"),
    (["follow", LOG, "--timeout", "soon"], "logphase follow: error: argument --timeout"),
    (["follow", LOG, "--until", "never"], "logphase follow: error: argument --until"),
    (["check"], "logphase check: error: the following arguments are required"),
    (["check", LOG, "-j", "x"], "logphase check: error: argument --jobs/-j: not a number"),
    (["compare", LOG], "logphase compare: error: the following arguments are required"),
    (["compare", LOG, LOG, "--bogus"], "logphase compare: error: unrecognized arguments: --bogus"),
    (["report"], "logphase report: error: the following arguments are required"),
    (["report", LOG, "--run", "x"], "logphase report: error: argument --run"),
    (["schema", "--bogus"], "logphase schema: error: unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize(("argv", "start"), BAD_INVOCATIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_usage_error_is_one_line_on_stderr_with_exit_2(argv: list[str], start: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    out, err = capsys.readouterr()
    assert stopped.value.code == EXIT_USAGE
    assert out == "" or (argv == [] and out.startswith("usage: logphase"))  # a bare logphase shows the help too
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(start), err
    command = "logphase" if err.startswith("logphase:") else "logphase " + argv[0]
    assert err.rstrip().endswith(f"(see {command} --help)")
    assert "usage:" not in err


TWO_RUNS = str(Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "stale_two_runs.log")


def test_parse_run_n_reports_that_run_as_report_run_n_draws_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["parse", TWO_RUNS, "--run", "1", "--color", "never"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert "FAILED" in first and "(run 1 of 2, from line 1)" in first
    assert cli.main(["parse", TWO_RUNS, "--color", "never"]) == 0
    last = capsys.readouterr().out
    assert cli.main(["parse", TWO_RUNS, "--run", "2", "--color", "never"]) == 0
    assert capsys.readouterr().out == last and "(run 2 of 2," in last
    assert cli.main(["parse", TWO_RUNS, "--run", "1", "--json"]) == 1
    assert '"kv_cache_insufficient_memory"' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "3"], "--run 3: run 3 does not exist: the log holds 2 run(s)"),
        (["--run", "0"], "--run 0: runs are numbered from 1"),
        (["--run", "1", "--events"], "--run picks the report of one run; --events and --unrecognized print the whole log"),
        ([TWO_RUNS, "--run", "1"], "--run picks a run of one log; with several logs each is read to its last run"),
        ([TWO_RUNS, "--run", "1", "--merge"], "--run picks a run of one log; with several logs each is read to its last run"),
    ],
)
def test_parse_run_out_of_range_or_with_other_options_is_one_line_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["parse", TWO_RUNS, *argv]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and err == f"logphase: {message}\n"


def test_follow_help_keeps_its_example_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["follow", "--help"])
    lines = capsys.readouterr().out.splitlines()
    assert "  python -m sglang.launch_server ... > server.log 2>&1 &" in lines
    assert "  logphase follow server.log --until ready --timeout 900 && run_benchmark" in lines
