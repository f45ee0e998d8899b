"""Every notebook under ``notebooks/`` runs top to bottom without error.

Each notebook is executed by nbclient in a fresh kernel whose working directory is the
notebook's folder. The kernel always runs the interpreter running the tests (the project's
virtual environment), even when another ``python3`` kernelspec is installed for the user.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
KERNEL_NAME = "python3"
CELL_TIMEOUT_S = 600
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # colours in IPython tracebacks
KERNEL_ARGV = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


class _CurrentInterpreterKernelSpecs(KernelSpecManager):
    """Resolves every kernel name to an ipykernel on ``sys.executable``."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(
            argv=list(KERNEL_ARGV),
            display_name="Python 3 (the interpreter running the tests)",
            language="python",
            name=kernel_name,
        )


def execute(notebook: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run every cell of ``notebook`` in a fresh kernel started in ``cwd``."""
    kernel_manager = KernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=_CurrentInterpreterKernelSpecs(),
    )
    client = NotebookClient(
        notebook,
        km=kernel_manager,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(cwd)}},
    )
    try:
        return client.execute()
    finally:
        # nbclient shuts down only kernels it made itself; this one is ours
        if kernel_manager.has_kernel:
            kernel_manager.shutdown_kernel(now=True)


def _failed_cell(notebook: nbformat.NotebookNode) -> str:
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return f"cell {index} (id {cell.get('id', '?')})"
    return "a cell"


def _figures_shown(notebook: nbformat.NotebookNode) -> list[str]:
    """Code cells ending in a ``plot_...(...)`` call that show no image (ids)."""
    missing = []
    for index, cell in enumerate(notebook.cells):
        lines = [line for line in cell.source.splitlines() if line.strip()]
        if cell.cell_type != "code" or not lines or not lines[-1].startswith("plot_"):
            continue
        if not any("image/png" in o.get("data", {}) for o in cell.outputs):
            missing.append(f"cell {index} (id {cell.get('id', '?')})")
    return missing


def test_kernel_runs_this_interpreter(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import os, sys\nprint(sys.executable)\nprint(os.getcwd())"
            )
        ]
    )
    executed = execute(notebook, tmp_path)
    printed = executed.cells[0].outputs[0]["text"].splitlines()
    assert Path(printed[0]).resolve() == Path(sys.executable).resolve()
    assert Path(printed[1]).resolve() == tmp_path.resolve()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # the whole notebook; each cell is bounded by CELL_TIMEOUT_S
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    assert notebook.metadata.get("kernelspec", {}).get("name") == KERNEL_NAME, (
        f"{path.name}: kernelspec must be {KERNEL_NAME!r}"
    )
    try:
        execute(notebook, path.parent)
    except CellExecutionError as error:
        failure = ANSI_ESCAPE.sub("", str(error))
    else:
        assert _figures_shown(notebook) == [], f"{path.name}: figures not shown"
        return
    pytest.fail(
        f"{path.name}: {_failed_cell(notebook)} raised:\n{failure}", pytrace=False
    )
