"""Shared fixtures of the urban tests: a synthetic town population, a small finished run."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.experiment.lifecycle import RunResult
from mesa_llm_mobility.urban.decisions import PersonaFacts
from tests.urban.runs import run_urban

WORKPLACES = ["Factory"] * 20 + ["Office"] * 17 + [
    "Coffee shop", "Hospital", "Gym", "Food court", "Supermarket", "Museum", "Cinema", "School",
    "Amusement park", "Hospital", "Coffee shop", "Supermarket", "Gym",
]  # fmt: skip
LIFESTYLES = [
    "goes to the gym",
    "loves coffee",
    "cooks, shops for groceries",
    "watches movies",
    "quiet",
]


def town_personas(n_households: int = 43, seed: int = 0) -> list[PersonaFacts]:
    """Deterministic households: singles, couples, families; ~60 travellers for 43 households."""
    people: list[PersonaFacts] = []
    work = 0
    for h in range(n_households):
        size = 1 if h < 26 else 2 if h < 34 else 3 if h < 42 else 4
        adults = 1 if size == 1 else 2
        children = size - adults
        home = "Uptown apartment" if h % 2 == 0 else "Midtown apartment"
        vehicles = 0 if h % 11 == 3 else (2 if h % 3 == 0 and adults == 2 else 1)
        names = [f"Person {h}-{k}" for k in range(adults)]
        kids = tuple(f"Child {h}-{k}" for k in range(children))
        for k, name in enumerate(names):
            facility = WORKPLACES[work % len(WORKPLACES)] if (h + k) % 9 != 8 else None
            if facility is not None:
                work += 1
            people.append(
                PersonaFacts(
                    name=name,
                    age=30 + (h * 7 + k) % 35,
                    home=home,
                    occupation="worker" if facility else "retired",
                    work_facility=facility,
                    work_start=8 * 60 if facility else None,
                    work_end=17 * 60 if facility else None,
                    licensed=(h + k) % 6 != 5,
                    household=f"H{h}",
                    vehicles=vehicles,
                    family=tuple(n for n in names if n != name),
                    children=kids,
                    friends=(f"Person {(h + 5) % n_households}-0",),
                    lifestyle=LIFESTYLES[(h + k) % len(LIFESTYLES)],
                )
            )
    return people


@pytest.fixture(scope="session")
def personas() -> list[PersonaFacts]:
    return town_personas()


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> RunResult:
    """A finished rule-brain run of 12 travellers over 2 days (a few seconds)."""
    out = tmp_path_factory.mktemp("runs") / "u1"
    return run_urban(out, days=2, n_agents=12, seed=3)


def slow_sometimes(body):
    """Answers take 0-0.16 s, by the prompt: batches finish out of order, as real ones do."""
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 5) * 0.04


def scripted_traveller(*, faulty: bool, every: int = 4):
    """The scripted traveller of the local server, with every provider fault mixed in or not."""
    from mesa_llm_mobility.cognition.testing import (  # noqa: PLC0415
        provider_faults,
        with_faults,
    )
    from mesa_llm_mobility.urban import scripted_llm  # noqa: PLC0415

    if not faulty:
        return scripted_llm.respond
    return with_faults(scripted_llm.respond, provider_faults(hang_s=3.0), every=every)


def local_llm_options(server, **extra):
    """LLM brain options for the local server: short timeouts (the hang outlives one), 1 repair."""
    return {
        "api_base": server.api_base, "api_key": "sk-local", "timeout_s": 1.0,
        "max_attempts": 3, "max_total_s": 8.0, "max_repairs": 1, **extra,
    }  # fmt: skip
