"""The activity vocabulary of stay points: NumoSim's sixteen activity codes and their names.

NumoSim labels every stay with an integer code; the generator, the prompts and the tables use
the names. :data:`ACTIVITIES` is the fixed vocabulary the orchestrator's chains must use.
"""

from __future__ import annotations

ACTIVITY_CODES: dict[int, str] = {
    0: "Transportation",
    1: "Home",
    2: "Work",
    3: "School",
    4: "ChildCare",
    5: "BuyGoods",
    6: "Services",
    7: "EatOut",
    8: "Errands",
    9: "Recreation",
    10: "Exercise",
    11: "Visit",
    12: "HealthCare",
    13: "Religious",
    14: "SomethingElse",
    15: "DropOff",
}
"""NumoSim's activity code -> activity name."""

ACTIVITIES: tuple[str, ...] = tuple(ACTIVITY_CODES.values())
"""The activity vocabulary, in code order."""

ACTIVITY_INDEX: dict[str, int] = {name: code for code, name in ACTIVITY_CODES.items()}
"""Activity name -> code (the position in :data:`ACTIVITIES`)."""

HOME = "Home"
WORK = "Work"
