"""The export registry: checks before reading, atomic writes, the missing-library hint.

A requested export is refused before anything is read (unknown format, a suffix the format
does not write, an option it does not take); a run of another model is refused at open; a
writer that fails leaves nothing under the output's name nor beside it; a missing library of
the ``exports`` extra is one line saying what to install, and ``mlm`` exits with status 2.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.evacuation.cli import EVACUATION_EXPORTS
from mesa_llm_mobility.experiment.exports import (
    EXPORTS_EXTRA_HINT,
    ExportError,
    ExportFormat,
    check_export,
    export_run,
    format_registry,
    write_through_temp,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.trajectory.cli import TRAJECTORY_EXPORTS
from mesa_llm_mobility.urban.cli import URBAN_EXPORTS

GEO = ExportFormat("geo", "json:dumps", (".parquet", ".geojson"), "a layer", ("day",))
FORMATS = format_registry(GEO)


def test_every_registered_writer_exists_and_names_its_suffixes():
    for formats in (URBAN_EXPORTS, EVACUATION_EXPORTS, TRAJECTORY_EXPORTS):
        for entry in formats.values():
            assert callable(entry.load_writer()), entry.name
            assert entry.suffixes and all(s.startswith(".") for s in entry.suffixes)
    assert set(URBAN_EXPORTS) == {
        "matsim-plans",
        "matsim-trips",
        "matsim-legs",
        "links",
        "facilities",
        "trips",
    }
    assert set(EVACUATION_EXPORTS) == {"pedpy-trajectory", "pedpy-geometry"}
    assert set(TRAJECTORY_EXPORTS) == {"stays", "trajectory-points", "trajectory-lines"}


def test_a_format_is_declared_once():
    with pytest.raises(ValueError, match="declared twice"):
        format_registry(GEO, GEO)


@pytest.mark.parametrize(
    ("name", "out", "options", "message"),
    [
        ("shp", "a.parquet", {}, "unknown urban export format 'shp' (formats: geo)"),
        (
            "geo",
            "dir/a.csv",
            {},
            "dir/a.csv: the geo format writes .parquet or .geojson",
        ),
        (
            "geo",
            "a.geojson",
            {"period": 30},
            "--period does not apply to the geo format",
        ),
    ],
)
def test_a_request_is_checked_before_anything_is_read(name, out, options, message):
    with pytest.raises(ExportError) as error:
        check_export(FORMATS, "urban", name, out, options)
    assert message in str(error.value)


def test_suffixes_are_compared_without_case_and_unset_options_pass():
    assert check_export(FORMATS, "urban", "geo", "A.GeoJSON", {"period": None}) is GEO


def test_a_run_of_another_model_is_refused(tmp_path):
    RunDirectory.create(tmp_path / "run", {"seed": 0}, model="trajectory")
    with pytest.raises(RunDirectoryError, match="not of the urban model"):
        export_run(FORMATS, "urban", tmp_path / "run", "geo", tmp_path / "a.parquet")
    assert not (tmp_path / "a.parquet").exists()


def test_a_failed_write_leaves_nothing(tmp_path):
    out = tmp_path / "sub" / "layer.parquet"

    def half_then_fail(path):
        path.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_through_temp(out, half_then_fail)
    assert list((tmp_path / "sub").iterdir()) == []


def test_a_write_replaces_the_file_whole(tmp_path):
    out = tmp_path / "plans.xml.gz"
    out.write_text("old")
    seen = []

    def write(path):
        seen.append(path.name)
        path.write_text("new")

    assert write_through_temp(out, write) == out
    assert out.read_text() == "new"
    assert seen[0].endswith(".xml.gz") and seen[0] != out.name
    assert [p.name for p in tmp_path.iterdir()] == ["plans.xml.gz"]


def test_a_missing_library_is_the_extras_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "pedpy", None)
    entry = ExportFormat("p", "pedpy:load_trajectory", (".txt",), "p")
    with pytest.raises(OSError, match="pedpy is missing") as error:
        entry.load_writer()
    assert EXPORTS_EXTRA_HINT in str(error.value)
    assert 'pip install "mesa-llm-mobility[exports]"' in str(error.value)


def test_an_import_error_of_our_own_is_not_blamed_on_the_extra():
    entry = ExportFormat("x", "mesa_llm_mobility.no_such_module:w", (".txt",), "x")
    with pytest.raises(ImportError) as error:
        entry.load_writer()
    assert not isinstance(error.value, OSError)


def test_mlm_says_what_to_install_when_a_library_is_missing(
    tmp_path, monkeypatch, capsys
):
    RunDirectory.create(tmp_path / "run", {"seed": 0}, model="evacuation")
    monkeypatch.setitem(sys.modules, "pedpy", None)
    monkeypatch.delitem(
        sys.modules, "mesa_llm_mobility.evacuation.pedpy_export", raising=False
    )
    out = tmp_path / "out" / "t.txt"
    argv = ["evac", "export", str(tmp_path / "run"), "--format", "pedpy-trajectory"]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and EXPORTS_EXTRA_HINT in err[0], err
    assert not out.parent.exists()


def test_mlm_help_imports_no_export_library():
    code = (
        "import sys\n"
        "from mesa_llm_mobility.cli import build_parser\n"
        "build_parser()\n"
        "heavy = {'geopandas', 'pedpy', 'movingpandas', 'shapely', 'pyproj'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
