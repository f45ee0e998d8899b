"""Tolerant extraction of one JSON value from an LLM answer.

Models wrap JSON in code fences, precede it with prose ("Sure! Here is the plan:"), or trail it
with remarks. We accept all of these, and fail with a message that a model can act on when asked
to repair its answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


class JSONExtractionError(ValueError):
    """No JSON object could be read from the answer."""


class JSONTruncatedError(JSONExtractionError):
    """The answer's JSON object was cut off: it is never closed (a token limit, usually)."""


def extract_json(text: str) -> Any:
    """Return the first JSON object (or array) found in ``text``.

    Tries, in order: the whole text, the contents of each code fence, then every ``{`` (then ``[``)
    position from the left, decoding the longest valid value that starts there (trailing prose is
    ignored). An answer whose first object (or array) is never closed was cut off: it is
    reported as such, not mined for an object nested in it (which would be the wrong one).

    Raises:
        JSONTruncatedError: when the first value opened is never closed.
        JSONExtractionError: when no JSON value can be decoded, with the decoder's reason.
    """
    if not isinstance(text, str) or not text.strip():
        raise JSONExtractionError("the answer was empty; expected a JSON object")
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        first_error = exc
    for block in _FENCE.findall(stripped):
        try:
            return json.loads(block.strip())
        except json.JSONDecodeError:
            continue
    openers = [stripped.find(c) for c in "{[" if c in stripped]
    first = min(openers, default=-1)
    if first >= 0 and _never_closed(stripped, first):
        raise JSONTruncatedError(
            f"the answer was cut off: the JSON value opened at character {first} is never "
            f"closed (the answer ends after {len(stripped)} characters); reply with a "
            "complete, shorter JSON object"
        )
    for opener in "{[":  # objects first: "[1]" in prose must not hide the real answer
        for start, char in enumerate(stripped):
            if char != opener:
                continue
            try:
                value, _ = _DECODER.raw_decode(stripped, start)
            except json.JSONDecodeError:
                continue
            return value
    raise JSONExtractionError(
        f"the answer contains no valid JSON object ({first_error.msg} at line {first_error.lineno} column {first_error.colno})"
    )


def _never_closed(text: str, start: int) -> bool:
    """Whether the bracket opened at ``start`` is still open at the end of ``text``.

    Brackets inside JSON strings (escapes honoured) do not count.
    """
    depth = 0
    in_string = escaped = False
    for char in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True
