"""Shared fixtures of the urban tests: a synthetic town population, a small finished run."""

from __future__ import annotations

import datetime as dt
import json

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


# ----------------------------------------------------------------------------- GATSim storage
GATSIM_START = "2025-03-10 00:00:00"


def gatsim_profile(name: str, **changes) -> dict:
    """A persona's short-term memory as the GATSim prototype stores it (profile and plans)."""
    profile = {
        "name": name,
        "age": 35,
        "gender": "female",
        "family_role": "single",
        "licensed_driver": True,
        "work_facility": "Office",
        "work_time": "8:00-17:00",
        "occupation": "clerk",
        "preferences_in_transportation": "drives",
        "innate": "calm",
        "lifestyle": "early riser",
        "home_facility": "Uptown apartment",
        "number_of_vehicles_in_family": 1,
        "household_income": "middle",
        "friends": [],
        "other_description": "",
        "other_family_members": {},
        "household_size": 1,
        "original_plans": [
            {
                "reflection": "A normal Monday.",
                "plan": [
                    ["Uptown apartment", "06:30", 20, "none", "none", "Wake up"],
                    ["Office", "07:20", 150, "drive", "shortest", "Drive to work"],
                    ["Uptown apartment", "17:00", "none", "drive", "shortest", "Home"],
                ],
                "concepts": [],
                "datetime": GATSIM_START,
            }
        ],
        "revised_plans": [],
        "daily_reflections": [
            {
                "reflection": "A long day.",
                "concepts": [],
                "datetime": "2025-03-10 23:59:00",
            }
        ],
    }
    profile.update(changes)
    return profile


def _clock(minute: int) -> str:
    start = dt.datetime(2025, 3, 10, tzinfo=dt.UTC)
    return (start + dt.timedelta(minutes=minute)).strftime("%Y-%m-%d %H:%M:%S")


def write_gatsim_run(
    root,
    timelines: dict,
    last_step: int,
    profiles: dict | None = None,
    memories: dict | None = None,
    *,
    skip: tuple[int, ...] = (),
):
    """Write a GATSim checkout under ``root`` with one run, ``gatsim/storage/experiment_2``.

    Args:
        root: The checkout's folder.
        timelines: For each persona, its states ``(start, status, place, next_node)`` in
            order; file ``k`` holds the latest state that began at or before minute ``k - 1``
            (file 0 the first), as the prototype saves after simulating minute ``k - 1``.
        last_step: The last movement file.
        profiles: Short-term memories by persona (default :func:`gatsim_profile`).
        memories: Concept node contents by persona (events).
        skip: Movement files not to write.

    Returns:
        The run folder.
    """
    folder = root / "gatsim" / "storage" / "experiment_2"
    (folder / "movements").mkdir(parents=True)
    (root / "gatsim" / "map").mkdir(parents=True, exist_ok=True)
    names = list(timelines)
    meta = {
        "fork_name": None,
        "simulation_name": "test",
        "start_date": GATSIM_START,
        "curr_time": _clock(last_step),
        "minutes_per_step": 1,
        "maze_name": "the town",
        "persona_names": names,
        "step": last_step,
    }
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    for k in range(last_step + 1):
        if k in skip:
            continue
        events = {}
        for name, states in timelines.items():
            now = [s for s in states if s[0] <= k - 1] or [states[0]]
            start, status, place, next_node = now[-1]
            events[name] = {
                "name": name,
                "place": place,
                "next_node": next_node,
                "status": status,
                "start_time": _clock(start),
                "description": f"{status} at {place}",
                "coord": [0, 0],
            }
        payload = {
            "meta": {"curr_time": _clock(k)},
            "mobility_events": events,
            "queues": {},
        }
        (folder / "movements" / f"{k}.json").write_text(
            json.dumps(payload), encoding="utf-8"
        )
    for name in names:
        own = folder / "personas" / name
        own.mkdir(parents=True)
        profile = (profiles or {}).get(name) or gatsim_profile(name)
        (own / "short_term_memory.json").write_text(
            json.dumps(profile), encoding="utf-8"
        )
        nodes = [
            {
                "id": k,
                "type": "event",
                "created": "2025-03-10T08:00:00",
                "last_accessed": "2025-03-10T08:00:00",
                "expiration": "2025-03-11T08:00:00",
                "content": text,
                "keywords": ["trip"],
                "spatial_scope": None,
                "time_scope": None,
                "importance": 0.5,
                "embedding": None,
            }
            for k, text in enumerate((memories or {}).get(name, []))
        ]
        (own / "long_term_memory.json").write_text(
            json.dumps({"curr_time": _clock(last_step), "concept_nodes": nodes}),
            encoding="utf-8",
        )
    return folder


# Ann drives Uptown apartment (Node_1) -> Office (Node_2) over Ave_1_link_1 (Node_12),
# St_5_link_1 (Node_8) and St_5_link_2, the prototype's way: a minute at each node, a queue
# of 2 minutes before St_5_link_1, and the door of the Office one minute after Node_2.
ANN = [
    (0, "staying", "Uptown apartment", None),
    (440, "waiting", "Node_1", None),
    (441, "driving", "Ave_1_link_1", "Node_12"),
    (449, "waiting", "Node_12", None),
    (450, "waiting", "St_5_link_1", "Node_8"),
    (452, "driving", "St_5_link_1", "Node_8"),
    (470, "waiting", "Node_8", None),
    (471, "driving", "St_5_link_2", "Node_2"),
    (479, "waiting", "Node_2", None),
    (480, "waiting", "Office", None),
    (482, "staying", "Office", None),
]
# Bea walks Midtown apartment (Node_4) -> School (Node_5) over Ave_2_link_1 and stays.
BEA = [
    (0, "staying", "Midtown apartment", None),
    (450, "waiting", "Node_4", None),
    (451, "walking", "Ave_2_link_1", "Node_5"),
    (467, "waiting", "Node_5", None),
    (468, "staying", "School", None),
]


@pytest.fixture
def gatsim_checkout(tmp_path):
    """A small GATSim checkout: Ann drives to the Office, Bea walks to the School."""
    profiles = {
        "Ann Lee": gatsim_profile("Ann Lee"),
        "Bea Roy": gatsim_profile(
            "Bea Roy",
            home_facility="Midtown apartment",
            work_facility="School",
            work_time="8:00-16:00",
            licensed_driver=False,
            number_of_vehicles_in_family=0,
        ),
    }
    memories = {
        "Ann Lee": [
            (
                "Ann Lee travels from Uptown apartment to Office by travel mode drive; start "
                "time is Mon 2025-03-10 07:20; trip time is 40 minutes"
            )
        ]
    }
    write_gatsim_run(
        tmp_path, {"Ann Lee": ANN, "Bea Roy": BEA}, 500, profiles, memories
    )
    return tmp_path
