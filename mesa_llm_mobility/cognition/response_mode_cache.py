"""The response mode each endpoint accepted, remembered across processes in a small JSON file.

A brain probes its endpoint's structured-output modes once (llama.cpp's server answers HTTP 500
to ``json_schema`` and takes the schema in ``json_object``); without a memory every process does
it again: a resumed run, each run of a sweep, each shard. A :class:`ResponseModeCache` keeps, per
endpoint, the mode it confirmed::

    {"<sha256 of model, api base and mode chain>": {"mode": "json_object_schema"}}

The key is a hash, so neither the address nor anything else of the endpoint is written, and
nothing secret ever is. :func:`~mesa_llm_mobility.cognition.make_brain` keeps the file next to a
ledger file (the run directory) unless told another (``response_mode_cache=`` or
``$MLM_RESPONSE_MODE_CACHE``: a sweep or a sharded run passes one file to all its runs). A
remembered mode is where probing starts, not a promise: an endpoint that rejects it now steps
down as ever, and the new mode is written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

RESPONSE_MODE_CACHE_FILE = "response_modes.json"
"""The cache's file name next to a run's ledger."""


class ResponseModeCache:
    """A JSON file of endpoint key -> confirmed response mode.

    Reads and writes are whole-file and atomic (a temporary file renamed over the old one), so
    processes sharing the file (a sweep's runs) never see half a file; the last writer wins. A
    file that is missing, unreadable or not this shape is an empty cache (with a warning when
    it exists).

    Args:
        path: The JSON file (created, with its folder, on the first write).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ResponseModeCache({str(self.path)!r})"

    @staticmethod
    def key(model: str, api_base: str | None, chain: tuple[str, ...]) -> str:
        """The key of an endpoint: a hash of the model, the server's address and the chain."""
        text = json.dumps([model, api_base or "", list(chain)])
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> str | None:
        """The mode remembered for ``key``, or ``None``."""
        entry = self._read().get(key)
        mode = entry.get("mode") if isinstance(entry, dict) else None
        return mode if isinstance(mode, str) else None

    def put(self, key: str, mode: str) -> None:
        """Remember ``mode`` for ``key`` (a failure to write is logged, not raised)."""
        with self._lock:
            entries = self._read()
            entries[key] = {"mode": mode}
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                handle, temporary = tempfile.mkstemp(
                    dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
                )
                with os.fdopen(handle, "w", encoding="utf-8") as file:
                    json.dump(entries, file, indent=1, sort_keys=True)
                os.replace(temporary, self.path)
            except OSError as error:
                logger.warning("could not write %s: %s", self.path, error)

    def _read(self) -> dict[str, object]:
        try:
            entries = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            logger.warning(
                "%s: not a response-mode cache (%s); ignored", self.path, error
            )
            return {}
        return entries if isinstance(entries, dict) else {}
