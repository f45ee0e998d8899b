from mesa_llm_mobility.evacuation import EvacuationModel, run_tables
from mesa_llm_mobility.evacuation.run_files import TABLES
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from tests.evacuation.runs import run_evacuation


def test_the_run_directory_holds_what_the_model_gives(tmp_path):
    config = {"composition": "C", "block": 2, "seed": 4, "time_limit_s": 6}
    result = run_evacuation(tmp_path / "run", config)
    run = RunDirectory.open(tmp_path / "run")
    assert {name: run.config[name] for name in config} == config
    assert sorted(run.table_names()) == sorted(TABLES)
    assert result.outputs == [run.plots_dir / "trajectories.png"]
    assert run.metadata["extra"]["steps"] == result.model.tick == 18
    with EvacuationModel(composition="C", block=2, rng=4, time_limit_s=6) as again:
        again.run()
    for name, table in run_tables(again).items():
        stored = run.read_table(name)
        assert list(stored.columns) == list(table.columns), name
        assert len(stored) == len(table), name
