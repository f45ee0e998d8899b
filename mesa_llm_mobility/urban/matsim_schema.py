"""A structural check of MATSim ``population_v6`` files, without MATSim (which is Java).

:func:`check_population_v6` reads a plans file (``.xml`` or ``.xml.gz``) and checks what
MATSim's ``population_v6.dtd`` declares, plus the rules its comments state and MATSim's reader
relies on:

- the document type names ``population_v6.dtd`` and the root is ``<population>``;
- each element holds only the children the DTD allows, in its order: ``population``
  (``attributes``?, ``person``*), ``person`` (``attributes``?, ``plan``*), ``plan`` (activities
  and legs, starting and ending with an activity, one leg between two activities),
  ``activity`` (``attributes``?), ``leg`` (``attributes``?, ``route``?), ``attributes``
  (``attribute``*);
- each element carries only the DTD's attributes, its required ones (person ``id``, activity
  ``type``, leg ``mode``, attribute ``name`` and ``class``), and enumerated values from their
  lists (``selected`` yes/no, ``sex`` f/m, ...);
- person ids are unique; an activity has ``x`` and ``y`` (numbers) or a ``link``; the first
  activity of a plan has an ``end_time``; times are ``HH:MM:SS`` (hours may pass 24);
- and one rule of ours: a plan's times never go back (each activity's start and end, each
  leg's departure and arrival, in plan order).

The first problem is raised as :class:`PopulationFormatError`, one line naming the file, the
person and the element.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from xml.etree import ElementTree as ET

DTD_NAME = "population_v6.dtd"

_CHILDREN = {
    "population": re.compile(r"(attributes )?(person )*"),
    "person": re.compile(r"(attributes )?(plan )*"),
    "plan": re.compile(r"(activity (leg activity )*)?"),
    "activity": re.compile(r"(attributes )?"),
    "leg": re.compile(r"(attributes )?(route )?"),
    "attributes": re.compile(r"(attribute )*"),
    "attribute": re.compile(r""),
    "route": re.compile(r""),
}
"""Each element's content model (its children's tags, each followed by a space)."""

_ATTRIBUTES: dict[str, dict[str, tuple[str, ...] | None]] = {
    "population": {"desc": None},
    "person": {
        "id": None,
        "sex": ("f", "m"),
        "age": None,
        "license": ("yes", "no"),
        "car_avail": ("always", "never", "sometimes"),
        "employed": ("yes", "no"),
    },
    "attributes": {},
    "attribute": {"name": None, "class": None},
    "plan": {"score": None, "type": None, "selected": ("yes", "no")},
    "activity": {
        "type": None,
        "x": None,
        "y": None,
        "link": None,
        "facility": None,
        "start_time": None,
        "end_time": None,
        "max_dur": None,
    },
    "leg": {"mode": None, "dep_time": None, "trav_time": None},
    "route": {
        "type": None,
        "start_link": None,
        "end_link": None,
        "trav_time": None,
        "distance": None,
        "vehicleRefId": None,
    },
}
"""Each element's allowed attributes, with their enumerated values (None: any text)."""

_REQUIRED = {
    "person": ("id",),
    "attribute": ("name", "class"),
    "activity": ("type",),
    "leg": ("mode",),
}

_TIME = re.compile(r"(\d{2,}):([0-5]\d):([0-5]\d)")
_DOCTYPE = re.compile(r"<!DOCTYPE\s+population\s+SYSTEM\s+\"([^\"]+)\"")


class PopulationFormatError(ValueError):
    """A population file breaks the ``population_v6`` structure (one line, naming where)."""


@dataclass(frozen=True)
class PopulationSummary:
    """What a checked population file holds.

    Attributes:
        persons: Persons.
        plans: Plans.
        activities: Activities.
        legs: Legs.
        crs: The population's ``coordinateReferenceSystem`` attribute, or None.
    """

    persons: int
    plans: int
    activities: int
    legs: int
    crs: str | None


def parse_matsim_time(text: str) -> float:
    """``HH:MM:SS`` as seconds.

    Raises:
        ValueError: If ``text`` is not a MATSim time.
    """
    match = _TIME.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a time HH:MM:SS")
    hours, minutes, seconds = (int(part) for part in match.groups())
    return hours * 3600.0 + minutes * 60.0 + seconds


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")


def check_population_v6(path: str | os.PathLike[str]) -> PopulationSummary:
    """Check a MATSim plans file against the ``population_v6`` structure.

    Args:
        path: The ``.xml`` or ``.xml.gz`` file.

    Returns:
        What it holds.

    Raises:
        PopulationFormatError: At the first problem, naming the file, person and element.
        OSError: If the file cannot be read.
    """
    path = Path(path)
    try:
        with _open(path) as file:
            head = file.read(2048).decode("utf-8", errors="replace")
            doctype = _DOCTYPE.search(head)
            if doctype is None or not doctype.group(1).endswith(DTD_NAME):
                raise PopulationFormatError(
                    f'{path}: no <!DOCTYPE population SYSTEM "...{DTD_NAME}">'
                )
            file.seek(0)
            # a plans file to check; expat fetches no external entity and bounds expansion
            root = ET.parse(file).getroot()  # noqa: S314
    except ET.ParseError as error:
        raise PopulationFormatError(f"{path}: not well-formed XML: {error}") from error
    except (EOFError, gzip.BadGzipFile) as error:
        raise PopulationFormatError(f"{path}: not a readable gzip file") from error
    if root.tag != "population":
        raise PopulationFormatError(
            f"{path}: the root is <{root.tag}>, not <population>"
        )
    _check_element(path, root, "population")
    crs = None
    ids: set[str] = set()
    plans = activities = legs = 0
    for child in root:
        if child.tag == "attributes":
            for item in child:
                if item.get("name") == "coordinateReferenceSystem":
                    crs = (item.text or "").strip() or None
            continue
        person_id = child.get("id", "")
        where = f"{path}: person {person_id!r}"
        if person_id in ids:
            raise PopulationFormatError(f"{where}: duplicate person id")
        ids.add(person_id)
        for element in child.iter():
            _check_element(where, element, element.tag)
        for plan in child.findall("plan"):
            plans += 1
            activities += len(plan.findall("activity"))
            legs += len(plan.findall("leg"))
            _check_plan(where, plan)
    return PopulationSummary(len(ids), plans, activities, legs, crs)


def _check_element(where: object, element: ET.Element, tag: str) -> None:
    if tag not in _CHILDREN:
        raise PopulationFormatError(f"{where}: unknown element <{tag}>")
    children = "".join(f"{child.tag} " for child in element)
    if not _CHILDREN[tag].fullmatch(children):
        raise PopulationFormatError(
            f"{where}: <{tag}> may not hold {children.strip() or 'nothing'} in this order"
        )
    allowed = _ATTRIBUTES[tag]
    for name, value in element.attrib.items():
        if name not in allowed:
            raise PopulationFormatError(f"{where}: <{tag}> has no attribute {name!r}")
        choices = allowed[name]
        if choices is not None and value not in choices:
            raise PopulationFormatError(
                f"{where}: <{tag} {name}={value!r}> is not one of {', '.join(choices)}"
            )
    for name in _REQUIRED.get(tag, ()):
        if name not in element.attrib:
            raise PopulationFormatError(f"{where}: <{tag}> needs {name!r}")
    if tag in ("attribute", "route"):
        return
    if (element.text or "").strip():
        raise PopulationFormatError(f"{where}: <{tag}> holds text")


def _check_plan(where: str, plan: ET.Element) -> None:
    last = -float("inf")
    for number, element in enumerate(plan):
        at = f"{where}: {element.tag} {number}"
        times: list[float] = []
        try:
            if element.tag == "activity":
                _check_place(at, element)
                if number == 0 and "end_time" not in element.attrib:
                    raise PopulationFormatError(
                        f"{at}: the first activity needs end_time"
                    )
                for key in ("start_time", "end_time"):
                    if key in element.attrib:
                        times.append(parse_matsim_time(element.attrib[key]))
            else:
                if "dep_time" in element.attrib:
                    departure = parse_matsim_time(element.attrib["dep_time"])
                    times.append(departure)
                    if "trav_time" in element.attrib:
                        times.append(
                            departure + parse_matsim_time(element.attrib["trav_time"])
                        )
                elif "trav_time" in element.attrib:
                    parse_matsim_time(element.attrib["trav_time"])
        except ValueError as error:
            if isinstance(error, PopulationFormatError):
                raise
            raise PopulationFormatError(f"{at}: {error}") from None
        for time in times:
            if time < last:
                raise PopulationFormatError(f"{at}: its times go back in the plan")
            last = time


def _check_place(at: str, activity: ET.Element) -> None:
    has_xy = "x" in activity.attrib and "y" in activity.attrib
    if not has_xy and "link" not in activity.attrib:
        raise PopulationFormatError(f"{at}: an activity needs x and y, or a link")
    for key in ("x", "y"):
        if key in activity.attrib:
            try:
                float(activity.attrib[key])
            except ValueError:
                raise PopulationFormatError(
                    f"{at}: {key}={activity.attrib[key]!r} is not a number"
                ) from None
