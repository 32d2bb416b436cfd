"""Secrets never leave logphase: a log whose server_args hold API keys, passwords, a Hugging Face
token and credentials inside values (a URL's password, a token in a query, a list of keys) shows
``***`` in their place in every output (the JSON report, --events, the text, the page, the
metrics' labels), while values that only look alike (token counts, a tokenizer's token, None)
stay as printed. The redaction happens once, where a line enters the engine (vocabulary/redact.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase.engine.engine import Engine
from logphase.engine.whole import parse_text
from logphase.faces import cli
from logphase.faces.timeline import render_html, render_svg
from logphase.vocabulary.redact import is_secret_key, redact_text

SECRETS = (
    "sk-live-4f9a8b7c6d5e4f3a2b1c",
    "adm1n-S3cret",
    "kf-pass-77",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "hunter2",
    "qtok-123",
    "key-one",
    "key-two",
    "Zm9vOmJhcg",
)

# modelled on fixtures/logs/tp1_success.log (SGLang 0.5.3, one H100), with a server launched with
# secrets, and a weight download that fails through a proxy URL holding a password
LOG = (
    "[2025-10-21 14:03:11] server_args=ServerArgs(model_path='https://bob:hunter2@models.example.com/Qwen2.5-7B-Instruct', "
    "tokenizer_path='Qwen/Qwen2.5-7B-Instruct', tokenizer_mode='auto', load_format='auto', trust_remote_code=False, "
    "host='0.0.0.0', port=30000, mem_fraction_static=0.88, max_total_tokens=None, tp_size=1, "
    "api_key='sk-live-4f9a8b7c6d5e4f3a2b1c', admin_api_key='adm1n-S3cret', api_keys=['key-one', 'key-two'], "
    "ssl_keyfile='/etc/ssl/server.key', ssl_keyfile_password='kf-pass-77', hf_token='hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345', "
    "mask_token=151669, ds_heavy_token_num=256, served_model_name='qwen', "
    "weight_loader_url='https://mirror.example.com/w?token=qtok-123&region=eu', enable_metrics=True)\n"
    "[2025-10-21 14:03:12] Using default HuggingFace chat template with detected content format: string\n"
    "[2025-10-21 14:03:18] Init torch distributed begin.\n"
    "[2025-10-21 14:03:19] Init torch distributed ends. mem usage=0.00 GB\n"
    "[2025-10-21 14:03:19] Load weight begin. avail mem=78.53 GB\n"
    "[2025-10-21 14:03:20] Authorization: Basic Zm9vOmJhcg\n"
    "[2025-10-21 14:03:21] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2580, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py", line 730, in load_model\n'
    "    self.model = get_model(\n"
    "OSError: Can't load weights from 'https://bob:hunter2@models.example.com/Qwen2.5-7B-Instruct' "
    "(token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 rejected)\n"
    "\n"
    "[2025-10-21 14:03:21] Received sigquit from a child process. It usually means the child failed.\n"
)


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {where}"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "secrets.log"
    path.write_text(LOG)
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    cli.main(argv)
    out, err = capsys.readouterr()
    return out + err


def test_the_log_holds_the_secrets_and_still_reads_as_before(log: Path) -> None:
    for secret in SECRETS:
        assert secret in LOG
    report = parse_text(LOG)
    assert report.outcome == "failed" and report.phase is not None and report.phase.value == "weight_loading"
    assert report.failure is not None and report.failure.cause.value == "model_load_error"


def test_json_report_and_events_hold_no_secret(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(run(["parse", str(log), "--json"], capsys))
    assert_no_secret(json.dumps(report), "parse --json")
    config = report["config"]
    assert config["api_key"] == "***" and config["admin_api_key"] == "***" and config["hf_token"] == "***"
    assert config["ssl_keyfile_password"] == "***" and config["api_keys"] == "***"
    assert config["model_path"] == "https://bob:***@models.example.com/Qwen2.5-7B-Instruct"
    assert config["weight_loader_url"] == "https://mirror.example.com/w?token=***&region=eu"
    # what only looks alike stays: a path, counts, a tokenizer's token, None
    assert config["ssl_keyfile"] == "/etc/ssl/server.key" and config["mask_token"] == 151669
    assert config["ds_heavy_token_num"] == 256 and config["max_total_tokens"] is None
    assert "***" in report["failure"]["message"]
    events = run(["parse", str(log), "--events"], capsys)
    assert_no_secret(events, "parse --events")
    first = json.loads(events.splitlines()[0])
    assert first["kind"] == "server_args" and "api_key='***'" in first["raw"] and first["args"]["api_key"] == "***"
    assert_no_secret(run(["parse", str(log), "--unrecognized"], capsys), "parse --unrecognized")


def test_text_page_and_follow_hold_no_secret(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_no_secret(run(["parse", str(log), "--color", "never"], capsys), "parse")
    assert_no_secret(run(["follow", str(log), "--json"], capsys), "follow --json")
    report = parse_text(LOG)
    assert_no_secret(render_html(report), "report page")
    assert_no_secret(render_svg(report), "report svg")


def test_the_metrics_model_label_holds_no_secret() -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client import CollectorRegistry, generate_latest

    from logphase.faces.live.metrics import ReportCollector

    engine = Engine(source="secrets.log")
    engine.feed(LOG.encode())
    engine.finish()
    registry = CollectorRegistry()
    registry.register(ReportCollector(lambda: (engine.report(), None), "test"))
    exposition = generate_latest(registry).decode()
    assert 'model="https://bob:***@models.example.com/Qwen2.5-7B-Instruct"' in exposition
    assert_no_secret(exposition, "metrics")


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("python -m sglang.launch_server --api-key s3cr3t --port 30000", "python -m sglang.launch_server --api-key *** --port 30000"),
        ("server_args={'api_key': 'sk-1', 'hf_token': None, 'tp_size': 2}", "server_args={'api_key': '***', 'hf_token': None, 'tp_size': 2}"),
        ("export HF_TOKEN=hf_abc", "export HF_TOKEN=***"),
        ("git clone https://ghp_abcdef@github.com/x", "git clone https://***@github.com/x"),
        ("GET /v1/models?key=AIzaSy123 HTTP/1.1", "GET /v1/models?key=*** HTTP/1.1"),
        ("Decode batch, #running-req: 12, #token: 3400, token usage: 0.01", None),
        ("Decode batch, #full token: 3400, full token usage: 0.00", None),
        ("send add for key: barrier_7, get null response", None),
        ("if _idx_token == 0:", None),
        ("usage: [--api-key API_KEY] [--hf-token HF_TOKEN]", None),
        ("KeyError: 'model.layers.0.mlp'", None),
        ("ENV PWD:/root", None),
    ],
)
def test_redact_text(text: str, redacted: str | None) -> None:
    assert redact_text(text) == (redacted if redacted is not None else text)


def test_secret_keys_by_their_last_word() -> None:
    secret = ["api_key", "admin_api_key", "api_keys", "hf_token", "ssl_keyfile_password", "X-Amz-Credential", "apiKey", "Authorization"]
    not_secret = ["ssl_keyfile", "max_total_tokens", "ds_heavy_token_num", "mask_token", "tokenizer_path", "monkey", "key_path"]
    assert all(is_secret_key(k) for k in secret)
    assert not any(is_secret_key(k) for k in not_secret)


def test_the_quick_test_knows_every_trigger_word() -> None:
    from logphase.vocabulary.redact import _TRIGGERS, _may_hold_a_secret

    assert all(_may_hold_a_secret(f"a {word} b") for word in _TRIGGERS)
    assert not _may_hold_a_secret("[2026-05-09 09:20:00] load weight begin. avail mem=78.53 gb")


# the secret keys' heads are found from the secret words' places (a 64 KiB server_args dump read in
# 0.9 ms where _HEAD.finditer took 7): the same heads, on any text
_HEAD_TEXT = st.lists(
    st.sampled_from(
        [*"aKy_-.#'\"=: ,{}()[]1\néİ", "key", "token", "api_key", "--api-key ", "Password", "hf_token", "monkey", "auth", "éapi_key"]
    ),
    max_size=30,
).map("".join)


@given(_HEAD_TEXT)
def test_secret_heads_are_those_of_the_whole_scan(text: str) -> None:
    from logphase.vocabulary import redact

    whole = [m.span() for m in redact._HEAD.finditer(text) if is_secret_key(m.group("key"))]
    assert [m.span() for m in redact._secret_heads(text)] == whole


def test_secret_heads_look_at_each_character_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of key characters holding many secret words ('key_key_...', 64 KiB of it in a cut dump)
    is walked back once, not once from each of its words: counted, not timed."""
    from logphase.vocabulary import redact

    looked: list[str] = []
    real = redact._is_key_char

    def counting(ch: str) -> bool:
        looked.append(ch)
        return real(ch)

    monkeypatch.setattr(redact, "_is_key_char", counting)
    text = "x " + "key_" * 20_000 + "key=hunter2 " + "token." * 5_000 + "auth: s3cret"
    assert redact.redact_text(text) == "x " + "key_" * 20_000 + "key=*** " + "token." * 5_000 + "auth: ***"
    assert len(looked) <= len(text)
