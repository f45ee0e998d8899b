"""Every shipped rule policy passes its own kind's validator on the models' real requests.

The rule brain validates its answers like any other (a rejected rule answer raises
``RulePolicyError``), so these runs finishing is the proof; the recording brain below also checks
each answer again and that every kind of each model was asked.
"""

from __future__ import annotations

from collections import Counter

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.scenario import load_scenario
from mesa_llm_mobility.urban.synthesis import synthesize_with_brain


class CheckingRuleBrain(RuleBrain):
    """The rule brain, counting each kind and checking every answer with its kind again."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.kinds: Counter[str] = Counter()

    def decide_all(self, requests, *, tags=None):
        results = super().decide_all(requests, tags=tags)
        for result in results:
            kind = result.request.kind
            checked = kind.check_output(result.request.context, result.output)
            assert checked.failure is None, (kind.name, result.agent_id, checked.errors)
            self.kinds[kind.name] += 1
        return results


def test_urban_rule_policies_pass_their_validators():
    brain = CheckingRuleBrain(rng=0)
    model = UrbanMobilityModel(days=2, rng=0, brain=brain)
    model.run()
    model.close()
    assert set(brain.kinds) == {
        "DailyPlan",
        "PlanRevision",
        "Chat",
        "ChatTurn",
        "DailyReflection",
    }


def test_evacuation_rule_policy_passes_its_validator():
    for composition in "AH":
        brain = CheckingRuleBrain(rng=0)
        EvacuationModel(composition=composition, block=1, rng=0, brain=brain).run()
        assert brain.kinds["EvacuationMove"] > 0


def test_population_rule_sampler_passes_its_validator():
    brain = CheckingRuleBrain(rng=0)
    synthesize_with_brain(70, load_scenario("nguyen_dupuis"), brain=brain, rng=0)
    assert brain.kinds == {"PopulationBatch": 1}
