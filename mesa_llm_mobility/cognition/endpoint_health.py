"""Fail fast when the LLM endpoint cannot answer: a wrong key, model name or address, or no server.

A dead, mis-keyed or mis-named endpoint must not turn an LLM run into a rule-brain run that looks
like one: every decision would fall back to its rule policy, and the outputs would be labelled as
the model's. :class:`EndpointHealth` watches a brain's transport failures and gives up on the
endpoint

* at once, after an HTTP 401 or 403 (the key) or 404 (the model name or the address): these
  answers would be the same for every later call;
* after ``max_failures`` decisions in a row whose calls all failed (connection refused, timeouts,
  5xx after every retry, other refusals) with no answer in between.

The brain then raises :class:`EndpointUnavailableError` (its one-line message says what failed
and how to fix it) for the batch under way and every later one, without recording the batch: a
run stops at its last checkpoint and resumes once the endpoint is fixed. ``allow_fallback_only``
keeps the old behaviour (the rule policies answer, each fallback recorded with its reason), with
one warning.
"""

from __future__ import annotations

import logging

from mesa_llm_mobility.cognition.redaction import redact
from mesa_llm_mobility.cognition.transport import TransportError

logger = logging.getLogger(__name__)

DEFAULT_MAX_TRANSPORT_FAILURES = 5
"""Decisions in a row whose transport failed, with no answer between, that stop a run."""

FATAL_STATUS = frozenset({401, 403, 404})
"""HTTP statuses that say the endpoint will never answer this brain as configured."""

ENDPOINT_UNAVAILABLE_EXIT_CODE = 3
"""The ``mlm`` exit status of a run stopped by :class:`EndpointUnavailableError`."""


class EndpointUnavailableError(RuntimeError):
    """The LLM endpoint cannot answer; the run stops (resumable once the endpoint is fixed).

    Attributes:
        status_code: The HTTP status that stopped the run (401, 403, 404), or ``None`` after a
            run of transport failures.
        failures: Decisions in a row whose transport failed.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, failures: int = 0
    ) -> None:
        super().__init__(redact(message))
        self.status_code = status_code
        self.failures = failures


class EndpointHealth:
    """Counts a brain's transport failures and decides when the endpoint is given up.

    Args:
        model: The litellm model string (named in the error).
        api_base: The server's URL (named in the error), or ``None`` for the provider's own.
        max_failures: Decisions in a row whose transport failed that give the endpoint up.
        allow_fallback_only: Never give up: warn once and let the rule policies answer.

    Raises:
        ValueError: for ``max_failures`` < 1.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None,
        *,
        max_failures: int = DEFAULT_MAX_TRANSPORT_FAILURES,
        allow_fallback_only: bool = False,
    ) -> None:
        if max_failures < 1:
            raise ValueError(
                f"LLMBrain.max_transport_failures must be >= 1, got {max_failures}"
            )
        self.model = model
        self.api_base = api_base
        self.max_failures = max_failures
        self.allow_fallback_only = allow_fallback_only
        self.failures_in_a_row = 0
        self.answered_once = False
        self.error: EndpointUnavailableError | None = None
        self._warned = False

    @property
    def given_up(self) -> bool:
        """Whether the brain must stop: the endpoint failed and fallbacks are not allowed."""
        return self.error is not None and not self.allow_fallback_only

    def why_not_send(self) -> str | None:
        """Why no further call should be made (a :func:`complete` ``abandoned`` callback)."""
        return "the LLM endpoint was given up" if self.given_up else None

    def answered(self) -> None:
        """A call got an answer (whatever its content): the endpoint works."""
        self.failures_in_a_row = 0
        self.answered_once = True

    def failed(self, error: TransportError) -> None:
        """A decision's call failed for good; give the endpoint up when this was one too many."""
        if self.error is not None:
            return
        self.failures_in_a_row += 1
        if error.status_code in FATAL_STATUS:
            self.error = EndpointUnavailableError(
                self._fatal_message(error), status_code=error.status_code
            )
        elif self.failures_in_a_row >= self.max_failures:
            self.error = EndpointUnavailableError(
                self._unreachable_message(error), failures=self.failures_in_a_row
            )
        if self.error is not None and self.allow_fallback_only and not self._warned:
            self._warned = True
            logger.warning(
                "%s; --allow-fallback-only: the rule policies answer instead",
                self.error,
            )

    def raise_if_given_up(self) -> None:
        """Raise a fresh :class:`EndpointUnavailableError` when the brain must stop."""
        if self.given_up:
            assert self.error is not None
            raise EndpointUnavailableError(
                str(self.error),
                status_code=self.error.status_code,
                failures=self.error.failures,
            )

    @property
    def _where(self) -> str:
        return f"at {self.api_base}" if self.api_base else "at the provider's address"

    def _fatal_message(self, error: TransportError) -> str:
        status = error.status_code
        detail = _detail(error)
        if status in (401, 403):
            fix = (
                "set MLM_API_KEY (or the provider's own variable, e.g. OPENAI_API_KEY) to a "
                "key this endpoint accepts for this model"
            )
            what = f"refused the API key (HTTP {status}: {detail})"
        else:
            fix = (
                "check the model name after 'llm:' (an OpenAI-compatible server lists its "
                "models at <api base>/models) and --api-base / MLM_API_BASE (such servers' "
                "addresses end in /v1)"
            )
            what = f"does not know the model or the address (HTTP 404: {detail})"
        return (
            f"the LLM endpoint {self._where} {what} for {self.model}: {fix}; the run "
            "stopped and resumes from its last checkpoint once fixed "
            "(--allow-fallback-only lets the rule policies answer instead)"
        )

    def _unreachable_message(self, error: TransportError) -> str:
        return (
            f"the LLM endpoint {self._where} gave no answer to {self.failures_in_a_row} "
            f"decisions in a row for {self.model} (last: {_detail(error)}): check that the "
            "server runs at --api-base / MLM_API_BASE and answers, or raise --timeout and "
            "--max-total for a slow one; the run stopped and resumes from its last "
            "checkpoint (--max-transport-failures N sets how many failures in a row stop "
            "a run, --allow-fallback-only lets the rule policies answer instead)"
        )


def _detail(error: TransportError) -> str:
    """The first line of a transport error, short and redacted."""
    text = str(error).strip().splitlines()
    return redact(text[0][:200]) if text else type(error).__name__
