"""Declared parameters: types, bounds, files, flags and sweep values from one declaration."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.experiment.parameters import (
    ParameterError,
    Parameters,
    add_parameter_arguments,
    load_model_class,
    parameter,
    parameters_from_arguments,
)
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters
from mesa_llm_mobility.urban.parameters import UrbanParameters

MODELS = (UrbanParameters, EvacuationParameters, TrajectoryParameters)


@dataclass(frozen=True, kw_only=True)
class ToyParameters(Parameters):
    """A toy model's parameters."""

    model_name: ClassVar[str] = "toy"

    rate: float = parameter(0.5, "how often, in % of steps", unit="1/step", ge=0, le=1)
    count: int | None = parameter(None, "how many", ge=1, flag="n", forkable=True)
    mode: Literal["fast", "slow"] = parameter("fast", "how")
    loud: bool = parameter(False, "whether it shouts")
    source: str | Path = parameter("reference", "input file", loaded=True)


def test_values_are_typed_and_bounded_with_one_line_naming_the_parameter():
    toy = ToyParameters(rate=np.float32(0.25), count=np.int64(3))
    assert (toy.rate, toy.count) == (0.25, 3)
    assert type(toy.count) is int and type(toy.rate) is float
    for values, message in (
        ({"rate": 1.5}, "toy rate: must be <= 1 1/step, got 1.5"),
        ({"rate": "fast"}, "toy rate: expected a number, got 'fast'"),
        ({"rate": float("nan")}, "toy rate: expected a finite number, got nan"),
        ({"count": 0}, "toy count: must be >= 1, got 0"),
        ({"count": 2.0}, "toy count: expected a whole number or none, got 2.0"),
        ({"count": True}, "toy count: expected a whole number or none, got True"),
        ({"mode": "medium"}, "toy mode: expected one of fast, slow, got 'medium'"),
        ({"loud": "yes"}, "toy loud: expected true or false, got 'yes'"),
        ({"seed": "0"}, "toy seed: expected a whole number or none, got '0'"),
        ({"brain": "gpt"}, "brain setting 'gpt' is not understood"),
    ):
        with pytest.raises(ParameterError, match=message) as refused:
            ToyParameters(**values)
        assert "\n" not in str(refused.value)


def test_a_loaded_input_is_taken_but_cannot_go_to_a_file():
    loaded = object()
    toy = ToyParameters(source=loaded)
    assert toy.source is loaded
    with pytest.raises(ParameterError, match="toy source: a object object cannot be"):
        toy.to_config()
    assert ToyParameters(source=Path("a/b.json")).source == "a/b.json"


def test_config_round_trip_and_unknown_names_refused_naming_the_file():
    toy = ToyParameters(rate=0.1, count=4, loud=True)
    config = json.loads(json.dumps(toy.to_config()))
    assert list(config) == [
        "seed",
        "brain",
        "rate",
        "count",
        "mode",
        "loud",
        "source",
    ]
    assert ToyParameters.from_config(config, where="run/config.json") == toy
    with pytest.raises(
        ParameterError, match=r"run/config.json: toy has no parameter 'colour'"
    ):
        ToyParameters.from_config({**config, "colour": 1}, where="run/config.json")
    assert ToyParameters.from_values({"n": 2}).count == 2  # a flag names it too
    assert toy.replace(n=5).count == 5 and toy.count == 4
    assert toy.changed(toy.replace(n=5, loud=False)) == {"count": 5, "loud": False}


def test_sweep_values_are_parsed_by_type_and_checked():
    assert ToyParameters.parse_values("rate", "0,0.5, 1") == ("rate", [0.0, 0.5, 1.0])
    assert ToyParameters.parse_values("n", "none,3") == ("count", [None, 3])
    assert ToyParameters.parse_values("loud", "true,off") == ("loud", [True, False])
    for name, text, message in (
        ("n", "abc", "toy count: expected a whole number or none, got 'abc'"),
        ("n", "1.5", "toy count: expected a whole number or none, got '1.5'"),
        ("n", "-5", "toy count: must be >= 1, got -5"),
        ("mode", "Z", "toy mode: expected one of fast, slow, got 'Z'"),
        ("colour", "red", "toy has no parameter 'colour'"),
    ):
        with pytest.raises(ParameterError, match=message):
            ToyParameters.parse_values(name, text)


def test_flags_come_from_the_declaration_with_units_bounds_and_help():
    parser = argparse.ArgumentParser(prog="toy")
    add_parameter_arguments(parser, ToyParameters)
    text = parser.format_help()  # a % in a help text must not break --help
    assert "how often, in % of steps [1/step] (default 0.5)" in " ".join(text.split())
    assert "--n N" in text and "--loud, --no-loud" in text
    assert "{fast,slow}" in text and "--brain" not in text  # the brain flags carry it
    args = parser.parse_args(["--rate", "0.2", "--no-loud", "--n", "3"])
    assert parameters_from_arguments(args) == {"rate": 0.2, "loud": False, "count": 3}
    assert parameters_from_arguments(parser.parse_args([])) == {}
    with pytest.raises(SystemExit):
        parser.parse_args(["--rate", "2"])


def test_forks_offer_only_the_forkable_parameters():
    assert ToyParameters.forkable() == ["brain", "count"]
    parser = argparse.ArgumentParser(prog="fork")
    add_parameter_arguments(parser, ToyParameters, only=["count"], defaults=False)
    text = parser.format_help()
    assert "--n N" in text and "--rate" not in text and "default" not in text


@pytest.mark.parametrize("parameters_class", MODELS)
def test_every_model_declares_its_parameters_once(parameters_class):
    model_cls = load_model_class(parameters_class)
    assert model_cls.parameters_class is parameters_class
    assert parameters_class.command and parameters_class.model_name
    for name in parameters_class.names():
        spec = parameters_class.spec(name)
        assert spec.help and "%" not in spec.help.replace("%%", ""), name
        if name != "seed":
            assert parameters_class.field_type(name), name


def test_a_parameter_is_written_in_one_place():
    """The urban reaction time: declared once; config, flags and sweep keys derive from it.

    Besides its declaration it appears only where the model uses its value (the model and its
    reaction schedule): no command line, runner, sweep or shared module names it.
    """
    source = Path(__file__).parents[2] / "mesa_llm_mobility"
    mentions = {
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if "reaction_minutes" in path.read_text()
    }
    assert "urban/parameters.py" in mentions
    assert not {m for m in mentions if m.endswith("cli.py") or "run_files" in m}
    assert not {m for m in mentions if not m.startswith("urban/")}
    declared = (source / "urban/parameters.py").read_text()
    assert declared.count("reaction_minutes: int = parameter(") == 1
