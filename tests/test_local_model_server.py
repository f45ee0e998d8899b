"""LocalModelServer's start checks, against a stand-in server (no llama.cpp needed).

The stand-in lists the model like llama.cpp's server and either answers a completion or dies
of SIGSEGV on it, as llama.cpp builds with AMX kernels do on some Xeons (llama.cpp #20824).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from mesa_llm_mobility.cognition.local_model import (
    PORTABLE_CMAKE_ARGS,
    LocalModelServer,
)

STAND_IN = textwrap.dedent(
    """
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    CRASH = sys.argv[2] == "crash"
    sys.stderr.write("load_tensors: AMX model buffer size = 213.91 MiB\\n")
    sys.stderr.flush()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({"data": [{"id": "gemma3-270m"}]})

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            if CRASH:
                os.kill(os.getpid(), signal.SIGSEGV)
            self._send({"choices": [{"message": {"role": "assistant", "content": "H"}}]})

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)

    def use(behaviour: str) -> LocalModelServer:
        def command(self, path):
            return [sys.executable, str(script), str(self.port), behaviour]

        monkeypatch.setattr(LocalModelServer, "_command", command)
        return LocalModelServer(model_path=tmp_path / "model.gguf")

    return use


def test_a_server_that_answers_is_started_and_stopped(stand_in):
    server = stand_in("answer")
    with server:
        assert server._process is not None and server._process.poll() is None
    assert server._process is None


def test_a_server_that_crashes_on_its_first_completion_is_a_clear_error(stand_in):
    server = stand_in("crash")
    with pytest.raises(RuntimeError) as raised:
        server.start()
    message = str(raised.value)
    assert message.startswith(
        "llama.cpp server crashed on its first completion with -11"
    )
    assert "AMX kernels crash" in message and PORTABLE_CMAKE_ARGS in message
    assert server._process is None  # stopped, nothing left running


def test_the_documented_build_is_the_portable_one():
    docs = (Path(__file__).parent.parent / "docs" / "llm.md").read_text()
    assert f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}"' in docs
