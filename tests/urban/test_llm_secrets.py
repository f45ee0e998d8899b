"""No secret is ever written: a provider that echoes the API key in its errors (a 401 and a 500
body) leaves no trace of it in any file of the run directory, on the console or in the logs."""

from __future__ import annotations

import itertools
import logging

import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content

# not shaped like a provider key: only the brain's registration of its key can catch it
KEY = "local-proxy-token-7f3a9c1e5b"


def _echoing_responder():
    turn = itertools.count()

    def respond(body):
        n = next(turn)
        if n % 3 == 0:
            return Fault.http(
                401,
                "Incorrect API key provided: {api_key}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
            )
        if n % 3 == 1:
            return Fault.http(500, "upstream failed for credentials {api_key}")
        prompt = body["messages"][1]["content"]
        if "Plan today" in prompt:
            return json_content(
                {"activities": [], "long_term_reflection": "quiet", "concepts": []}
            )
        return json_content({"action": "keep", "reason": "fine"})

    return respond


@pytest.mark.slow
def test_an_echoed_key_is_in_no_file_no_output_and_no_log(
    tmp_path, monkeypatch, capsys, caplog
):
    monkeypatch.setenv("MLM_API_KEY", KEY)
    out = tmp_path / "run"
    caplog.set_level(logging.DEBUG)
    with FakeLLMServer(_echoing_responder()) as server:
        code = main(
            [
                "-v",
                "urban",
                "run",
                "--days=1",
                "--agents=6",
                "--seed=2",
                "--brain=llm:openai/fake-model",
                f"--api-base={server.api_base}",
                "--timeout=5",
                "--max-attempts=2",
                "--max-total=10",
                "--allow-fallback-only",  # the 401s would stop the run (tested elsewhere)
                f"--out={out}",
                "--no-progress",
            ]
        )
        received = server.requests
    assert code == 0
    assert len(received) > 10  # the faults were really served
    ledger = (out / "ledger.jsonl").read_text(encoding="utf-8")
    assert "Incorrect API key provided: " in ledger  # the echo reached us
    files = [path for path in out.rglob("*") if path.is_file()]
    assert any(path.suffix == ".parquet" for path in files)
    assert any("checkpoint" in str(path) for path in files)
    leaked = [str(path) for path in files if KEY.encode() in path.read_bytes()]
    assert leaked == []
    printed = capsys.readouterr()
    assert KEY not in printed.out + printed.err
    assert KEY not in caplog.text
