"""The one run lifecycle on a toy model: start, stop, resume, fork, refusals, interruptions."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, ClassVar

import mesa
import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.experiment import (
    MobilityModel,
    Parameters,
    RunDirectory,
    RunDirectoryError,
    RunInterrupted,
    fork_run,
    parameter,
    resume_run,
    start_run,
)
from mesa_llm_mobility.experiment.parameters import ParameterError


@dataclass(frozen=True, kw_only=True)
class WalkParameters(Parameters):
    """A random walk's parameters."""

    model_name: ClassVar[str] = "walk"
    command: ClassVar[str] = "walk"
    model_class: ClassVar[str] = "tests.experiment.test_lifecycle.RandomWalk"

    steps: int = parameter(12, "steps to walk", ge=1, forkable=True)
    stride: float = parameter(1.0, "the largest stride", gt=0)
    fail_at: int | None = parameter(None, "the step that raises (a crash)")


class RandomWalk(MobilityModel):
    """A walk whose position is a table per day of 4 steps; a checkpoint after each day."""

    parameters_class: ClassVar[type[WalkParameters]] = WalkParameters
    parameters: WalkParameters
    checkpoint_unit: ClassVar[str] = "day"
    interrupt_at: ClassVar[int | None] = None

    def __init__(self, parameters=None, /, **kwargs: Any) -> None:
        super().__init__(parameters, **kwargs)
        self.position = 0.0
        self.rows: list[tuple[int, float]] = []
        self.datacollector = mesa.DataCollector({"position": "position"})

    def step(self) -> None:
        if self.steps == self.parameters.fail_at:
            raise RuntimeError("the walk fell")
        if self.steps == type(self).interrupt_at:
            raise KeyboardInterrupt
        self.position += self.parameters.stride * (2 * self.rng.random() - 1)
        super().step()
        self.rows.append((self.steps, self.position))
        self.datacollector.collect(self)
        self.running = self.steps < self.parameters.steps

    def checkpoint_due(self) -> bool:
        return self.steps % 4 == 0 or not self.running

    def checkpoint_number(self) -> int:
        return -(-self.steps // 4)

    def period_tables(self) -> dict[str, pd.DataFrame]:
        day = self.checkpoint_number()
        rows = [row for row in self.rows if -(-row[0] // 4) == day]
        return {"walk": pd.DataFrame(rows, columns=["step", "position"])}

    def final_tables(self) -> dict[str, pd.DataFrame]:
        return {"end": pd.DataFrame({"position": [self.position]})}

    @classmethod
    def ledger_after(cls, number: int):
        return lambda record: False

    def apply_parameters(self, parameters: WalkParameters) -> None:
        self.running = self.steps < parameters.steps
        super().apply_parameters(parameters)


def _positions(run) -> list[float]:
    return run.read_table("walk")["position"].tolist()


def test_a_run_writes_its_parameters_tables_and_checkpoints(tmp_path):
    result = start_run(
        RandomWalk, WalkParameters(seed=3), tmp_path / "w", progress=False
    )
    run = result.run
    assert result.finished and run.config["steps"] == 12 and run.config["seed"] == 3
    assert run.metadata["model"] == "walk"
    assert run.metadata["model_class"] == WalkParameters.model_class
    assert run.checkpoint_numbers() == [0, 1, 2, 3]
    assert run.table_days("walk") == [1, 2, 3] and len(_positions(run)) == 12
    assert run.read_table("end")["position"].tolist() == [result.model.position]


def test_a_stopped_run_resumes_to_the_same_run_and_a_fork_changes_what_it_may(
    tmp_path,
):
    whole = start_run(RandomWalk, WalkParameters(), tmp_path / "whole", progress=False)
    stopped = start_run(
        RandomWalk, WalkParameters(), tmp_path / "run", stop_after=2, progress=False
    )
    assert not stopped.finished and stopped.run.checkpoint_numbers() == [0, 1, 2]
    resumed = resume_run(tmp_path / "run", progress=False)
    assert resumed.finished
    assert _positions(resumed.run) == _positions(whole.run)

    longer = fork_run(
        tmp_path / "whole",
        tmp_path / "fork",
        at=2,
        changes={"steps": 16},
        progress=False,
    )
    assert longer.run.config["steps"] == 16
    assert longer.run.metadata["changes"] == {"steps": 16}
    assert _positions(longer.run)[:8] == _positions(whole.run)[:8]
    assert len(_positions(longer.run)) == 16
    with pytest.raises(ParameterError, match="stride cannot change in a fork"):
        fork_run(tmp_path / "whole", tmp_path / "f2", at=1, changes={"stride": 2.0})
    with pytest.raises(ParameterError, match="walk has no parameter 'colour'"):
        fork_run(tmp_path / "whole", tmp_path / "f3", at=1, changes={"colour": 1})
    assert not (tmp_path / "f2").exists() and not (tmp_path / "f3").exists()


def test_a_refused_start_writes_nothing_and_the_corrected_run_goes_ahead(tmp_path):
    out = tmp_path / "w"
    with pytest.raises(ParameterError, match="walk stride: must be > 0"):
        start_run(RandomWalk, WalkParameters(stride=-1), out, progress=False)
    assert not out.exists()

    class Refusing(RandomWalk):
        def __init__(self, parameters=None, /, **kwargs):
            super().__init__(parameters, **kwargs)
            raise ValueError("the walk's map is missing")

    with pytest.raises(ValueError, match="map is missing"):
        start_run(Refusing, WalkParameters(), out, progress=False)
    assert not out.exists()  # nothing half-written: the rerun is not refused
    assert start_run(RandomWalk, WalkParameters(), out, progress=False).finished


def test_a_crash_keeps_the_latest_checkpoint_and_ctrl_c_says_how_to_resume(
    tmp_path, monkeypatch
):
    crashed = tmp_path / "crash"
    with pytest.raises(RuntimeError, match="fell"):
        start_run(RandomWalk, WalkParameters(fail_at=6), crashed, progress=False)
    assert RunDirectory.open(crashed).checkpoint_numbers() == [0, 1]  # day 1 is kept
    monkeypatch.setattr(RandomWalk, "interrupt_at", 9)
    with pytest.raises(RunInterrupted) as interrupted:
        start_run(RandomWalk, WalkParameters(), tmp_path / "ctrl-c", progress=False)
    assert interrupted.value.checkpoint == 2
    assert str(interrupted.value) == (
        f"interrupted; {tmp_path / 'ctrl-c'} continues from its checkpoint 2 with: "
        f"mlm walk resume {tmp_path / 'ctrl-c'}"
    )
    monkeypatch.setattr(RandomWalk, "interrupt_at", None)
    whole = start_run(RandomWalk, WalkParameters(), tmp_path / "whole", progress=False)
    resumed = resume_run(tmp_path / "ctrl-c", progress=False)
    assert _positions(resumed.run) == _positions(whole.run)


def test_the_command_line_ends_a_ctrl_c_with_one_line(tmp_path, monkeypatch, capsys):
    def interrupted(args):
        raise RunInterrupted(RunDirectory(tmp_path / "r"), 3, "urban")

    monkeypatch.setattr("mesa_llm_mobility.cli.build_parser", _parser_with(interrupted))
    assert main(["x"]) == 130
    err = capsys.readouterr().err
    assert err == (
        f"mlm: interrupted; {tmp_path / 'r'} continues from its checkpoint 3 with: "
        f"mlm urban resume {tmp_path / 'r'}\n"
    )


def _parser_with(handler):
    def build():
        parser = argparse.ArgumentParser(prog="mlm")
        parser.add_argument("x")
        parser.set_defaults(handler=handler, verbose=False)
        return parser

    return build


def test_a_run_of_another_model_is_refused_in_one_line(tmp_path):
    start_run(RandomWalk, WalkParameters(steps=4), tmp_path / "w", progress=False)
    with pytest.raises(
        RunDirectoryError, match="a run of the walk model, not of the urban model"
    ):
        resume_run(tmp_path / "w", model="urban")
