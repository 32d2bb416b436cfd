"""The README shows what the tool prints: every example that runs logphase on a shipped fixture is run,
and its output compared with the block the README shows; the warning kinds the README lists are the
ones the code defines; the install and test commands use python3.

Outputs change on purpose: `python -m pytest tests/test_readme.py --update-readme` rewrites the
README's output blocks from the tool (review the diff).

Forms of example recognised:
* a session block, `$ command` lines each followed by its output (`$ echo $?` prints the code);
* a block holding one command (the last `&&` part runs logphase) followed at once by its output block;
* an output block whose command is said in the prose around it (OUTPUT_OF).
A command that cannot run here (kubectl) is replaced by the one the README says gives the same
bytes (STANDS_FOR). Each block runs in a temporary folder that links the fixtures, so that what the
commands write (baseline.json) stays out of the checkout.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FIXTURES, ROOT

README = ROOT / "README.md"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*\n", re.MULTILINE | re.DOTALL)

# commands the README shows that need what a test has not (a cluster): the command that prints the
# same, which the README names beside the example
STANDS_FOR = {
    "kubectl logs --previous --tail 500 sglang-qwen3-0 | logphase parse -": "tail -n 500 fixtures/logs/window_failure.log | logphase parse -",
}

# output blocks whose command is in the prose: (the block's first words, the command, what of its
# output the block shows: "all" or "headline", and what the block puts before it)
OUTPUT_OF = {
    "<stdin>: STARTING: in weight_loading": ("logphase parse - < fixtures/logs/silent_weight_load.log", "headline", ""),
    # assert_startup's message is what check prints
    "AssertionError: fixtures/logs/kv_cache_insufficient.log": (
        "logphase check fixtures/logs/kv_cache_insufficient.log --max weight_loading=30 --expect mem_fraction_static=0.88",
        "all",
        "AssertionError: ",
    ),
}


@dataclass
class Step:
    command: str  # as the README shows it
    shown: str  # the output the README shows
    run: str = ""  # what is run (the command, or what STANDS_FOR it)
    part: str = "all"
    before: str = ""


@dataclass
class Example:
    start: int  # the README's characters this example's output fills (a block's body)
    end: int
    steps: list[Step]
    session: bool  # `$ command` lines with the outputs between them
    prose: str = ""  # the README's text before the example's block (it may name the files' folder)

    def body(self, outputs: list[str]) -> str:
        if not self.session:
            return outputs[0]
        return "".join(f"$ {step.command}\n{out}" for step, out in zip(self.steps, outputs, strict=True))


def _session(body: str) -> list[Step]:
    steps: list[Step] = []
    for line in body.splitlines(keepends=True):
        if line.startswith("$ "):
            command = line[2:].rstrip("\n")
            steps.append(Step(command, "", STANDS_FOR.get(command, command)))
        elif steps:
            steps[-1].shown += line
    return steps


def readme_examples(text: str) -> list[Example]:
    blocks = list(FENCE.finditer(text))
    examples: list[Example] = []
    for i, block in enumerate(blocks):
        body = block.group(1)
        prose = text[blocks[i - 1].end() if i else 0 : block.start()]
        if body.startswith("$ "):
            steps = _session(body)
            if all(s.run.startswith(("logphase ", "echo $?", "tail ")) for s in steps):
                examples.append(Example(block.start(1), block.end(1), steps, session=True, prose=prose))
            continue
        command = body.strip().split("&&")[-1].strip()
        follows = i + 1 < len(blocks) and not text[block.end() : blocks[i + 1].start()].strip()
        if "\n" not in body.strip() and command.startswith("logphase ") and follows:
            out = blocks[i + 1]
            examples.append(Example(out.start(1), out.end(1), [Step(command, out.group(1), command)], session=False))
            continue
        for first_words, (command, part, before) in OUTPUT_OF.items():
            if body.startswith(first_words):
                step = Step(command, body, command, part, before)
                examples.append(Example(block.start(1), block.end(1), [step], session=False))
    return examples


def _folder_for(example: Example) -> Path:
    """Where the example's files are named from: the folder the prose before it names last, nearest
    the block (`fixtures/logs/merge/node1_fails/`), else the checkout or fixtures/logs."""
    named = [w for s in example.steps for w in s.run.split() if w.endswith(".log")]
    said = [ROOT / m for m in reversed(re.findall(r"`(fixtures/[\w/]+)/`", example.prose))]
    for folder in [*said, ROOT, FIXTURES]:
        if all((folder / name).is_file() for name in named):
            return folder
    raise AssertionError(f"the files of {example.steps[0].command!r} are not shipped: {named}")


def run_example(example: Example, tmp: Path) -> list[str]:
    """What the tool prints for each step, run in ``tmp`` with links to the example's files."""
    folder = _folder_for(example)
    tmp.mkdir()
    for entry in [ROOT / "fixtures"] if folder == ROOT else list(folder.iterdir()):
        (tmp / entry.name).symlink_to(entry)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    outputs: list[str] = []
    code = 0
    for step in example.steps:
        if step.run == "echo $?":
            outputs.append(f"{code}\n")
            continue
        done = subprocess.run(["bash", "-c", step.run], cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        code = done.returncode
        printed = done.stdout + done.stderr
        if step.part == "headline":
            printed = printed.splitlines(keepends=True)[0]
        outputs.append(step.before + printed)
    return outputs


def _same(shown: str, printed: str) -> bool:
    # trailing blanks are invisible in the README (and editors strip them)
    return [line.rstrip() for line in shown.splitlines()] == [line.rstrip() for line in printed.splitlines()]


def _unified(shown: str, printed: str, name: str) -> str:
    import difflib

    return "".join(difflib.unified_diff(shown.splitlines(True), printed.splitlines(True), f"README: {name}", "printed now"))


def test_readme_outputs_are_what_the_tool_prints(tmp_path: Path, update_readme: bool) -> None:
    text = README.read_text()
    examples = readme_examples(text)
    # every form is found (a README rewrite that hides the examples from this test fails it)
    assert sum(len(e.steps) for e in examples) >= 12 and any(e.session for e in examples), examples
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(lambda ie: run_example(ie[1], tmp_path / str(ie[0])), enumerate(examples)))
    problems = [
        _unified(step.shown, out, step.command)
        for example, outs in zip(examples, outputs, strict=True)
        for step, out in zip(example.steps, outs, strict=True)
        if not _same(step.shown, out)
    ]
    if update_readme and problems:
        for example, outs in sorted(zip(examples, outputs, strict=True), key=lambda eo: -eo[0].start):
            body = "".join(line.rstrip() + "\n" for line in example.body(outs).splitlines())
            text = text[: example.start] + body + text[example.end :]
        README.write_text(text)
        return
    assert not problems, "README outputs drifted (python -m pytest tests/test_readme.py --update-readme):\n" + "\n".join(problems)


def test_the_stand_ins_are_the_ones_the_readme_names() -> None:
    text = README.read_text()
    for shown, runs in STANDS_FOR.items():
        assert shown in text and f"`{runs}`" in text.replace("\n", " ")


# -- the warning kinds --------------------------------------------------------------------------


def warning_kinds_in_code() -> set[str]:
    """Every kind a report's warning can have: the kinds given to WarningReport(kind=...) and the
    run's notices (("kind", message, line)) in logphase/, as literals."""
    kinds: set[str] = set()
    for path in (ROOT / "logphase").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "WarningReport":
                kinds |= {k.value.value for k in node.keywords if k.arg == "kind" and isinstance(k.value, ast.Constant)}
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "append"
                and getattr(node.func.value, "attr", "") == "notices"  # type: ignore[attr-defined]
                and node.args
                and isinstance(node.args[0], ast.Tuple)
                and isinstance(node.args[0].elts[0], ast.Constant)
            ):
                kinds.add(node.args[0].elts[0].value)
    return kinds


def warning_kinds_in_readme() -> set[str]:
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `warnings` |"))
    return set(re.findall(r"`([a-z_]+)`", row.split("kinds:", 1)[1]))


def test_the_readme_lists_every_warning_kind_the_code_gives() -> None:
    from logphase.reporting.report import WarningReport

    in_code = warning_kinds_in_code()
    assert {"stale_log", "partial_log", "stderr_missing", "distributed_stall"} <= in_code  # the scan finds them
    assert warning_kinds_in_readme() == in_code
    described = WarningReport.model_fields["kind"].description or ""
    assert set(re.findall(r"[a-z_]+", described)) == in_code  # and the schema (logphase schema) says the same


# -- the commands a new user copies -----------------------------------------------------------------


def test_install_and_test_commands_use_python3() -> None:
    text = README.read_text()
    venvs = re.findall(r"(\S+) -m venv", text)
    assert len(venvs) >= 2 and set(venvs) == {"python3"}, venvs
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install '.[test]' && python -m pytest" in text
