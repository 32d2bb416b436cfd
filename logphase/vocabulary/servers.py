"""The servers logphase reads, by the name a report gives them (``Report.server``, ``--server``), and
how text spells them. Light: ``logphase --help`` reads it (the --server choices) and loads no pack."""

from __future__ import annotations

from typing import Literal

Server = Literal["sglang", "vllm"]
SERVERS: tuple[Server, ...] = ("sglang", "vllm")
# the projects' own spelling, for headlines
SERVER_NAMES: dict[str, str] = {"sglang": "SGLang", "vllm": "vLLM"}
