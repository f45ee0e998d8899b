"""One redaction step for every text that leaves the brain: no secret is ever written anywhere.

Providers echo credentials in their error messages (OpenAI's 401 says "Incorrect API key
provided: sk-..."), and such texts travel on as a decision's reason, into the ledger, the
decisions table, a checkpoint, a log line or an error shown to the user. Every one of those paths
passes its text through :func:`redact`, which removes

* the secrets this process was given: each :class:`~mesa_llm_mobility.cognition.LLMBrain`
  registers its API key with :func:`register_secret`, and the values of environment variables
  whose names say they hold a secret (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``)
  are read when redacting;
* anything shaped like a provider credential: ``sk-...`` keys, ``Bearer ...`` tokens, and the
  values of ``x-api-key`` / ``api-key`` / ``api_key`` / ``Authorization`` fields.

Redacted text keeps its shape around the secret, which is replaced by ``[REDACTED]``.

Binary files need the same care: Chroma's vector index files (``data_level0.bin``) hold their
whole allocated capacity, and the unused part is uninitialised heap memory, which can contain an
HTTP response the process read, key and all. :func:`scrub_files` overwrites every known secret
in the files under a folder with zero bytes; the memory store calls it whenever it has written.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"
"""What a secret is replaced by."""

MIN_SECRET_LENGTH = 8
"""Shorter values are not treated as secrets (they would match ordinary words)."""

_SECRET_ENV_NAME = re.compile(r"(?:API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)

# Credential-shaped text. Character classes exclude quotes and backslashes, so a match never
# runs past the end of a JSON string.
_PATTERNS = (
    # OpenAI (sk-..., sk-proj-...), Anthropic (sk-ant-...) and look-alike keys
    re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"),
    # Authorization: Bearer <token>
    re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/\-=]{6,}"),
    # x-api-key: <value>, api-key=<value>, "api_key": "<value>", authorization: <value>
    re.compile(
        r"(?i)(\b(?:x-api-key|api[-_]?key|authorization)[\"']?\s*[:=]\s*[\"']?)"
        r"(?!\[REDACTED\])([^\s\"'\\,;}]{6,})"
    ),
)

_lock = threading.Lock()
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Have every later :func:`redact` remove ``value`` (an API key the process was given).

    Args:
        value: The secret; ``None`` and values shorter than :data:`MIN_SECRET_LENGTH` are ignored.
    """
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def known_secrets() -> list[str]:
    """The registered secrets and the secret-named environment variables' values, longest first.

    Returns:
        The values :func:`redact` removes literally.
    """
    with _lock:
        values = set(_registered)
    values.update(
        value
        for name, value in os.environ.items()
        if _SECRET_ENV_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    )
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """Remove every secret from ``text``.

    Args:
        text: Any text bound for a file, a table, a log or the user.
        secrets: The literal secrets to remove; by default :func:`known_secrets`.

    Returns:
        The text with each secret replaced by :data:`REDACTED`.
    """
    if not text:
        return text
    for secret in known_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda match: match.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def redact_json(value: Any, secrets: Iterable[str] | None = None) -> str:
    """A JSON-like value as one JSON line, every string in it redacted.

    The line is redacted as one text (a pass of the patterns over the line instead of one per
    string): the patterns never match a quote or a backslash, so a match stays inside one JSON
    string (or a key and its value) and the line stays valid JSON. A secret that JSON escapes
    (a quote, a backslash, a control character) could hide from a literal search of the line,
    so a value holding such a secret is redacted string by string (:func:`redact_value`).

    Args:
        value: A ledger record.
        secrets: As for :func:`redact`; computed once for the value by default.

    Returns:
        The redacted JSON text (``ensure_ascii=False``, other values as ``str``).
    """
    literal = known_secrets() if secrets is None else list(secrets)
    if any(
        json.dumps(secret, ensure_ascii=False)[1:-1] != secret for secret in literal
    ):
        value = _redact_walk(value, literal)
    return redact(json.dumps(value, ensure_ascii=False, default=str), literal)


def redact_value(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """:func:`redact` every string inside a JSON-like value (dicts, lists, tuples, strings).

    Args:
        value: A ledger record, a table cell, a reason.
        secrets: As for :func:`redact`; computed once for the whole value by default.

    Returns:
        A redacted copy (strings and containers are rebuilt; other values are returned as is).
    """
    literal = known_secrets() if secrets is None else list(secrets)
    return _redact_walk(value, literal)


def _redact_walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {key: _redact_walk(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redact_walk(item, secrets) for item in value)
    return value


def scrub_files(folder: Path, secrets: Iterable[str] | None = None) -> int:
    """Overwrite every occurrence of a known secret in the files under ``folder`` with zeros.

    Only the bytes of the secret itself change, in place, so a file keeps its size and layout.
    Meant for files that may carry stray process memory (vector index files), where a secret can
    only be garbage.

    Args:
        folder: The folder to scan (recursively); a missing folder scrubs nothing.
        secrets: As for :func:`redact`; by default :func:`known_secrets`.

    Returns:
        The number of occurrences overwritten.
    """
    needles = [
        secret.encode()
        for secret in (known_secrets() if secrets is None else secrets)
        if secret
    ]
    if not needles or not folder.is_dir():
        return 0
    scrubbed = 0
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        hits = [
            (start, len(needle))
            for needle in needles
            for start in _occurrences(data, needle)
        ]
        if not hits:
            continue
        with path.open("r+b") as handle:
            for start, length in hits:
                handle.seek(start)
                handle.write(bytes(length))
        scrubbed += len(hits)
    return scrubbed


def _occurrences(data: bytes, needle: bytes) -> list[int]:
    found, start = [], data.find(needle)
    while start >= 0:
        found.append(start)
        start = data.find(needle, start + 1)
    return found


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message (with its arguments merged in)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record in place; never drops it.

        Args:
            record: The log record.

        Returns:
            True.
        """
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = RedactingFilter()
LOGGERS_REDACTED = ("mesa_llm_mobility", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""Loggers whose records are redacted once an LLM brain exists (ours and litellm's)."""


def install_log_redaction() -> None:
    """Redact the records of :data:`LOGGERS_REDACTED` and of every handler of the root logger.

    A filter on a logger applies only to records logged on that very logger, so the filter is
    also put on the root logger's handlers, where the records of our modules end up.
    Idempotent.
    """
    for name in LOGGERS_REDACTED:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
