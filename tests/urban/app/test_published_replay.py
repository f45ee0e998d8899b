from __future__ import annotations

from mesa_llm_mobility.urban.app import components, published_replay
from mesa_llm_mobility.urban.app.published_replay import (
    cache_dir,
    published_from_argv,
    published_run_dir,
)


def test_the_published_run_is_written_once_and_reused(tmp_path):
    first = published_run_dir(tmp_path)
    assert first.parent == tmp_path and first.name.startswith("gatsim_published_")
    stamp = (first / "metadata.json").stat().st_mtime_ns
    assert published_run_dir(tmp_path) == first
    assert (first / "metadata.json").stat().st_mtime_ns == stamp  # not written again
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no partial left


def test_a_folder_missing_a_day_is_written_again(tmp_path):
    folder = published_run_dir(tmp_path)
    (folder / "tables" / "link_states" / "day=3.parquet").unlink()
    assert published_run_dir(tmp_path) == folder
    assert (folder / "tables" / "link_states" / "day=3.parquet").is_file()


def test_the_folder_name_follows_the_shipped_data(tmp_path, monkeypatch):
    folder = published_run_dir(tmp_path)
    monkeypatch.setattr(published_replay, "shipped_data_hash", lambda: "0123456789")
    other = published_run_dir(tmp_path)
    assert other != folder and other.name == "gatsim_published_0123456789"


def test_the_cache_folder_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MLM_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("MLM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "mesa-llm-mobility"


def test_the_app_opens_the_published_run_on_its_option(monkeypatch, tmp_path):
    monkeypatch.delenv("MLM_APP_PUBLISHED", raising=False)
    monkeypatch.delenv("MLM_APP_RUN", raising=False)
    assert not published_from_argv(["solara", "run", "app.py"])
    assert not published_from_argv(["solara", "run", "--published", "app.py"])
    assert published_from_argv(["solara", "run", "app.py", "--", "--published"])
    monkeypatch.setattr("sys.argv", ["solara", "run", "app.py", "--", "--published"])
    assert components.first_run() == components.PUBLISHED_RUN
    monkeypatch.setattr("sys.argv", ["solara", "run", "app.py", "--", "--run", "r/x"])
    assert components.first_run() == "r/x"
    monkeypatch.setenv("MLM_APP_PUBLISHED", "1")
    assert components.first_run() == components.PUBLISHED_RUN
    monkeypatch.setenv("MLM_CACHE_DIR", str(tmp_path))
    run = components.open_saved_run(components.PUBLISHED_RUN)
    assert run.path.parent == tmp_path and run.published is not None
