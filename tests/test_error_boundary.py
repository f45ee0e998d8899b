"""The command line's one error boundary: one line naming the file, exit 2; quiet closed pipes."""

from __future__ import annotations

import errno
import itertools
import os
import socket
import subprocess
import sys

import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault
from mesa_llm_mobility.evacuation import scripted_llm as pedestrian
from mesa_llm_mobility.urban import scripted_llm as traveller


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: tmp / "missing.txt", "missing.txt: no such plaza map"),
        (lambda tmp: tmp, ": is a directory, not a plaza map"),
        (
            lambda tmp: (
                (tmp / "latin1.txt").write_bytes(b"caf\xe9\n") and tmp / "latin1.txt"
            ),
            "latin1.txt: plaza map is not UTF-8 text (byte 0xe9 at offset 3)",
        ),
    ],
    ids=["missing", "directory", "not-utf8"],
)
def test_a_bad_plaza_file_is_one_line_naming_it(tmp_path, capsys, make, expected):
    plaza = make(tmp_path)
    code = main(["evac", "run", f"--plaza={plaza}", f"--out={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("mlm: error: ") and expected in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("name", ["population", "scenario"])
def test_a_bad_urban_input_file_is_one_line_naming_it(tmp_path, capsys, name):
    bad = tmp_path / f"{name}.json"
    bad.write_text('{"nodes": [1, 2,,]}', encoding="utf-8")
    code = main(["urban", "run", f"--{name}={bad}", f"--out={tmp_path / 'out'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{bad}: not valid JSON (line 1, column 17)" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("block", ["0", "9"])
def test_blocks_outside_the_design_are_refused(tmp_path, capsys, block):
    with pytest.raises(
        SystemExit
    ) as exited:  # argparse's own exit: usage, then one line
        main(["evac", "run", f"--block={block}", f"--out={tmp_path / 'out'}"])
    assert exited.value.code == 2
    assert not (tmp_path / "out").exists()
    err = capsys.readouterr().err
    assert "argument --block: must be" in err and f"got {block}" in err


SPAMMER = """
import argparse
import mesa_llm_mobility.cli as cli


def build():
    parser = argparse.ArgumentParser()
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.set_defaults(handler=lambda args: [print("line", i) for i in range(200_000)] and 0)
    return parser


cli.build_parser = build
raise SystemExit(cli.main([]))
"""


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``mlm ... | head -1``: the reader goes away after one line; no traceback, status 0."""
    script = tmp_path / "spam.py"
    script.write_text(SPAMMER, encoding="utf-8")
    pipeline = subprocess.run(
        ["bash", "-c", f'set -o pipefail; "{sys.executable}" "{script}" | head -1'],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert pipeline.stdout == "line 0\n"
    assert pipeline.stderr == ""
    assert pipeline.returncode == 0


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "out"
    code = main(["urban", "run", "--agents", "3", "--out", str(out), "--no-progress"])
    monkeypatch.setattr(os, "fsync", real_fsync)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"mlm: error: {out / 'config.json'}: No space left on device")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()  # nothing half-written


KEY = "sk-boundary-canary-8d2f4b6a1c"


def _valid_until(responder, answers):
    """``responder`` for the first ``answers`` requests, then a 401 that echoes the key."""
    served = itertools.count()

    def respond(body):
        if next(served) < answers:
            return responder(body)
        return Fault.http(401, "Incorrect API key provided: {api_key}")

    return respond


@pytest.mark.slow
def test_a_refused_key_stops_an_urban_run_with_one_line_and_it_resumes(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("MLM_API_KEY", KEY)
    out = tmp_path / "run"
    llm = ["--brain=llm:openai/fake-model", "--max-attempts=1"]
    with FakeLLMServer(_valid_until(traveller.respond, 3)) as server:
        code = main(
            ["urban", "run", "--days=1", "--agents=3", "--seed=2", *llm,
             f"--api-base={server.api_base}", f"--out={out}", "--no-progress"]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith("mlm: error: the LLM endpoint at http://127.0.0.1:")
    assert "refused the API key (HTTP 401" in err and "MLM_API_KEY" in err
    assert err.count("\n") == 1 and KEY not in err
    assert not (out / "summary.json").exists()
    recorded = Ledger.read(out / "ledger.jsonl")
    assert len(recorded) == 3  # the answered batches; not the one that failed
    with FakeLLMServer(traveller.respond) as server:
        code = main(
            ["urban", "resume", str(out), f"--api-base={server.api_base}", "--no-progress"]
        )  # fmt: skip
        asked = server.request_count
    assert code == 0
    records = Ledger.read(out / "ledger.jsonl")
    assert {r["outcome"] for r in records} <= {"ok", "repaired"}
    assert (
        len(records) == len(recorded) + asked
    )  # the 3 answers replayed, not asked again
    leaked = [
        p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()
    ]
    assert leaked == []


@pytest.mark.slow
def test_no_server_stops_an_evacuation_run_with_one_line_and_it_resumes(
    tmp_path, capsys
):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    out = tmp_path / "run"
    code = main(
        ["evac", "run", "--composition=average=3", "--time-limit=4",
         "--brain=llm:openai/fake-model", f"--api-base={dead}", "--max-attempts=1",
         "--max-transport-failures=2", f"--out={out}", "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith(
        f"mlm: error: the LLM endpoint at {dead} gave no answer to 2 "
    )
    assert err.count("\n") == 1
    with FakeLLMServer(pedestrian.respond) as server:
        code = main(
            [
                "evac",
                "resume",
                str(out),
                f"--api-base={server.api_base}",
                "--no-progress",
            ]
        )
    assert code == 0
    assert {r["outcome"] for r in Ledger.read(out / "ledger.jsonl")} <= {
        "ok",
        "repaired",
        "rejected",
    }
