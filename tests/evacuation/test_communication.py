import json
import random

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionResult, Outcome
from mesa_llm_mobility.evacuation.communication import pairs_within
from mesa_llm_mobility.evacuation.decision_output import GOAL_CATEGORIES
from mesa_llm_mobility.evacuation.model import EvacuationModel


def test_pairs_within_radius_inclusive():
    r, s, d = pairs_within(
        np.array([[0, 0], [10, 0]]), np.array([[0, 3], [40, 0]]), 37.5
    )
    assert sorted(zip(r.tolist(), s.tolist(), strict=True)) == [(0, 0), (1, 0), (1, 1)]
    assert d[(r == 0) & (s == 0)][0] == 3.0


@pytest.mark.parametrize("seed", range(4))
def test_pairs_within_are_the_full_tables_pairs_in_its_order(seed):
    rng = np.random.default_rng(seed)
    receivers = rng.integers(0, 80, size=(300, 2))
    senders = np.vstack([receivers[:40], rng.integers(0, 80, size=(60, 2))])
    for radius in (0.0, 5.0, 12.5, 37.5):
        table = np.sqrt(((receivers[:, None] - senders[None]) ** 2).sum(axis=2))
        r, s = np.nonzero(table <= radius + 1e-9)
        got = pairs_within(receivers, senders, radius)
        assert np.array_equal(got[0], r) and np.array_equal(got[1], s)
        assert np.array_equal(got[2], table[r, s])


def test_shouts_and_exit_information_are_recorded_sender_to_receiver():
    model = EvacuationModel(composition="H", block=3, rng=1, time_limit_s=120).run()
    events = model.events_frame()
    heard = events[events["event"] == "shout_heard"]
    assert len(heard) > 0
    pos = model.positions_frame().set_index(["step", "agent_id"])
    for row in heard.itertuples():
        a = pos.loc[(row.step, row.agent_id)]
        b = pos.loc[(row.step, row.other_id)]
        assert (
            np.hypot(a.x - b.x, a.y - b.y) * 0.4 <= 15.0 + 1e-9
        )  # heard within 15 m, any line of sight
    sent = events[events["event"] == "exit_info_sent"]
    received = events[events["event"] == "exit_info_received"]
    assert len(sent) == len(received)
    assert list(zip(sent["agent_id"], sent["other_id"], strict=True)) == list(
        zip(received["other_id"], received["agent_id"], strict=True)
    )


PARAPHRASES = {
    "tour": ["keep strolling around the square", "Enjoy my afternoon walk."],
    "observe": ["look around and figure out what is happening"],
    "explore": ["Wander toward the parts I have not seen", "check out the far side"],
    "seek_exit": [
        "Leave the plaza by the way out I know",
        "get out of here through the opening",
        "head for the door on the east side!",
    ],
    "follow_others": ["stay with the crowd", "Go where everybody else is running"],
    "escape": [
        "Run from the man with the knife!!",
        "get away from the attacker, fast",
        "flee to safety",
    ],
}
"""Goals in words a model might choose (none is a category's token)."""

STYLES = (
    str.upper,
    str.title,
    lambda value: value.replace("_", " "),
    lambda value: value.replace("_", "-").capitalize() + ".",
    lambda value: f" {value}! ",
)
"""Ways a model writes an enumerated value."""


class Paraphraser(RuleBrain):
    """The rule pedestrian's decisions, written the way a real model writes its answers.

    Each ``EvacuationMove`` answer of the rule policy becomes the text of an LLM answer: the
    intent in other words (left out of every third answer after the first), enumerated values in other case and
    punctuation, the context capsule sometimes left out, unknown fields added (a ``shout`` of
    ``false`` among them), sometimes inside a code fence; the text is then checked by the kind,
    as the LLM brain checks a model's text. The wording draws from its own generator, so the
    run's random stream is the rule brain's.
    """

    name = "paraphraser"

    def __init__(self, rng):
        super().__init__(rng=rng)
        self.words = random.Random(7)
        self.answers = 0

    def decide_all(self, requests, *, tags=None):
        results = super().decide_all(requests, tags=tags)
        return [
            self._rewritten(result) if result.kind == "EvacuationMove" else result
            for result in results
        ]

    def _rewritten(self, result):
        self.answers += 1
        answer = result.output.model_dump(mode="json", exclude_none=True)
        answer["intent"] = self.words.choice(PARAPHRASES[answer["goal"]])
        if self.answers % 3 == 0 and result.request.context.previous is not None:
            del answer["intent"]  # the standing intent (in other words already) stays
        for field in ("action", "situation", "goal"):
            answer[field] = self.words.choice(STYLES)(answer[field])
        if self.words.random() < 0.25:
            answer.pop("context_capsule", None)
        answer.update(shout=False, reasoning="I weighed what I saw.", confidence=0.7)
        text = json.dumps(answer)
        if self.words.random() < 0.3:
            text = f"Here is my decision:\n```json\n{text}\n```"
        checked = result.request.kind.check(result.request.context, text)
        assert checked.output is not None, (text, checked.failure)
        return DecisionResult(result.request, checked.output, Outcome.OK)


def test_channels_fire_for_answers_worded_as_a_real_model_words_them():
    """Shouts heard, exit information and goal revisions do not depend on the answers' words.

    The same decisions in exact tokens and as a model would write them (other words for the
    intent, other case, fields left out or added) give the same events (every shout heard and
    every exit message), the same revision levels and the same outcomes. The reworded
    intents never contain a goal token, so a channel that matched the intent's words would
    fall silent here.
    """
    runs = {}
    for name, brain in (
        ("exact", RuleBrain(rng=np.random.default_rng(11))),
        ("worded", Paraphraser(rng=np.random.default_rng(11))),
    ):
        model = EvacuationModel(
            composition="H", block=3, rng=1, time_limit_s=90, brain=brain
        )
        runs[name] = model.run()
    exact, worded = runs["exact"], runs["worded"]
    events = exact.events_frame()
    counts = events["event"].value_counts()
    assert counts["shout_heard"] >= 10 and counts["exit_info_sent"] > 0
    pd.testing.assert_frame_equal(worded.events_frame(), events)
    pd.testing.assert_frame_equal(worded.positions_frame(), exact.positions_frame())
    mine, theirs = worded.decisions_frame(), exact.decisions_frame()
    for column in ("goal", "situation", "revision_level", "shout", "urgency"):
        pd.testing.assert_series_equal(mine[column], theirs[column])
    assert (theirs["revision_level"] == "goal").sum() > 0
    intents = set(mine["intent"])
    tokens = set(GOAL_CATEGORIES)
    assert intents.isdisjoint(tokens)
    assert not any(token in intent.lower() for intent in intents for token in tokens)
    pd.testing.assert_frame_equal(worded.pedestrians_frame(), exact.pedestrians_frame())
