import json
import logging

import pytest

from mesa_llm_mobility.cognition.redaction import (
    REDACTED,
    RedactingFilter,
    redact,
    redact_json,
    redact_value,
    register_secret,
    scrub_files,
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "Incorrect API key provided: sk-proj-abcDEF123456ghi.",
            "sk-proj-abcDEF123456ghi",
        ),
        ("Incorrect API key provided: sk-abc*********wxyz.", "sk-abc*********wxyz"),
        ("anthropic: sk-ant-api03-AbCdEf_123-XYZ", "sk-ant-api03-AbCdEf_123-XYZ"),
        (
            "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc-def",
            "eyJhbGciOi.JIUzI1NiJ9.abc-def",
        ),
        ("headers {'x-api-key': 'abcd1234efgh5678'}", "abcd1234efgh5678"),
        ('{"api_key": "plainsecretvalue"}', "plainsecretvalue"),
        ("api-key=zzzzzzzzzz9 rejected", "zzzzzzzzzz9"),
    ],
)
def test_provider_shaped_credentials_are_removed(text, secret):
    cleaned = redact(text)
    assert secret not in cleaned
    assert REDACTED in cleaned


def test_registered_and_environment_secrets_are_removed(monkeypatch):
    register_secret("my-self-hosted-token-42")
    monkeypatch.setenv("VLLM_API_KEY", "another-secret-value")
    text = "denied for my-self-hosted-token-42 and another-secret-value"
    assert redact(text) == f"denied for {REDACTED} and {REDACTED}"


def test_ordinary_text_is_left_alone():
    text = (
        "Plan today: work at Office 08:00-17:00; take link L3-4 (task-force meeting), "
        "key facts: the API was slow"
    )
    assert redact(text) == text


def test_redacted_records_stay_valid_json():
    record = {
        "reason": 'transport failed: 401 {"error": {"message": "key sk-abcdefgh12 bad"}}',
        "rounds": [{"errors": ["Bearer abcdefghij"], "raw": None}],
        "attempts": 1,
    }
    line = json.dumps(redact_value(record))
    assert "sk-abcdefgh12" not in line and "abcdefghij" not in line
    assert json.loads(line)["attempts"] == 1


def test_log_records_are_redacted():
    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "failed with %s", ("sk-abcdefgh1234",), None
    )
    RedactingFilter().filter(record)
    assert "sk-abcdefgh1234" not in record.getMessage()


def test_secrets_in_binary_files_are_overwritten_in_place(tmp_path):
    index = tmp_path / "memory" / "segment" / "data_level0.bin"
    index.parent.mkdir(parents=True)
    payload = b"\x00\x01vector" + b"key=my-secret-value-123" + b"\xff" * 10
    index.write_bytes(payload + b"my-secret-value-123")
    (tmp_path / "memory" / "clean.bin").write_bytes(b"nothing here")
    assert scrub_files(tmp_path / "memory", ["my-secret-value-123"]) == 2
    data = index.read_bytes()
    assert len(data) == len(payload) + 19  # same size and layout
    assert b"my-secret-value-123" not in data
    assert data.startswith(b"\x00\x01vectorkey=" + bytes(19) + b"\xff")
    assert scrub_files(tmp_path / "missing") == 0


@pytest.mark.parametrize(
    "record",
    [
        {"reason": 'HTTP 401 {"error": "key sk-abcdefgh12 bad"}', "n": 1},
        {"messages": [{"content": 'authorization=abc123\\"xyz and more'}]},
        {"raw": "Bearer abcdefghij\nnext line", "api_key": "plainsecretvalue"},
        {"text": "token my-registered-secret-77 inside"},
        {"text": 'a secret with a "quote" in it: my"quoted"secret-1'},
    ],
)
def test_a_record_redacted_as_one_line_is_valid_json_and_as_clean(record):
    secrets = ["my-registered-secret-77", 'my"quoted"secret-1']
    line = redact_json(record, secrets)
    again = json.loads(line)  # still valid JSON
    walked = redact_value(record, secrets)
    for secret in ("sk-abcdefgh12", "abcdefghij", "plainsecretvalue", *secrets):
        assert secret not in json.dumps(again) and secret not in line
    assert set(again) == set(walked)
