"""Identical requests within a run are answered once.

Two requests are identical when they are of the same kind, for the same model and sampling
parameters, with the same messages and an equal context (so the domain validator would judge the
answer the same way), whichever agent asks. Within a batch the first such request (the leader)
is sent and the others share its answer; across batches a valid answer is remembered
(:class:`AnswerMemo`, bounded) and given again. A shared answer costs no call and is recorded with
``deduplicated: true``, its rounds copied from the leader's and no attempts, tokens or repairs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from mesa_llm_mobility.cognition.kinds import DecisionRequest
from mesa_llm_mobility.cognition.ledger import request_key

DEFAULT_MEMO_SIZE = 10_000
"""Answers an :class:`AnswerMemo` keeps (oldest forgotten first)."""


def shared_key(
    request: DecisionRequest, model: str, params: dict[str, Any], digest: str
) -> str:
    """The identity of a request whatever agent states it (see the module docstring)."""
    return request_key(request.kind.name, "", model, params, digest)


class AnswerMemo:
    """Valid answers of a run by :func:`shared_key`, each with the context it was given for.

    Args:
        size: Answers kept at most; ``0`` turns de-duplication across batches off.
    """

    def __init__(self, size: int = DEFAULT_MEMO_SIZE) -> None:
        if size < 0:
            raise ValueError(f"AnswerMemo.size must be >= 0, got {size}")
        self.size = size
        self._answers: OrderedDict[str, tuple[Any, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str, context: Any) -> Any | None:
        """The exchange remembered for ``key`` when its context equals ``context``."""
        entry = self._answers.get(key)
        if entry is None or not _same(entry[0], context):
            return None
        self._answers.move_to_end(key)
        return entry[1]

    def put(self, key: str, context: Any, exchange: Any) -> None:
        """Remember a valid exchange (the oldest goes when full)."""
        if self.size == 0:
            return
        self._answers[key] = (context, exchange)
        self._answers.move_to_end(key)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)


def group_identical(
    keys: list[tuple[int, str, Hashable]],
) -> tuple[list[int], dict[int, int]]:
    """Split a batch's pending requests into leaders and the followers of each.

    Args:
        keys: ``(index, shared key, context)`` per pending request, in request order.

    Returns:
        The leaders' indexes (to send), and follower index -> its leader's index.
    """
    leaders: list[int] = []
    first: dict[str, list[tuple[Any, int]]] = {}
    followers: dict[int, int] = {}
    for index, key, context in keys:
        for leader_context, leader in first.get(key, ()):
            if _same(leader_context, context):
                followers[index] = leader
                break
        else:
            first.setdefault(key, []).append((context, index))
            leaders.append(index)
    return leaders, followers


def _same(left: Any, right: Any) -> bool:
    try:
        return bool(left == right)
    except Exception:  # a context type without a usable __eq__ is never shared
        return False
