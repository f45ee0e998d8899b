"""Reading the urban model's JSON data files: a bundled name or a path, with clear errors.

Scenarios and populations are both given either by a bundled name (``"nguyen_dupuis"``,
``"population_70"``: files in ``mesa_llm_mobility/urban/scenarios/``) or by a path to the user's
own copy. Both loaders read them here, so both report a missing file, an unreadable file or
broken JSON the same way, naming the file.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from mesa_llm_mobility.user_files import read_text


def is_bundled_name(path: str | Path) -> bool:
    """Whether ``path`` names a bundled file (no ``.json`` suffix, no folder)."""
    text = str(path)
    return not text.endswith(".json") and "/" not in text and "\\" not in text


def read_json_data(
    path: str | Path, what: str, error: type[Exception]
) -> tuple[Any, str]:
    """Load a bundled data file by name, or any JSON file by path.

    Args:
        path: Bundled name or file path.
        what: What the file holds (``"scenario"``, ``"population"``), for messages.
        error: Exception type raised on failure.

    Returns:
        ``(data, source)``: the parsed JSON and the file name to cite in later errors.

    Raises:
        error: naming the file when it is not bundled, cannot be read, or is not valid JSON.
    """
    if is_bundled_name(path) and not Path(path).exists():
        folder = resources.files("mesa_llm_mobility.urban") / "scenarios"
        bundled = folder / f"{path}.json"
        if not bundled.is_file():
            names = sorted(
                entry.name.removesuffix(".json")
                for entry in folder.iterdir()
                if entry.name.endswith(".json")
            )
            raise error(
                f"{path}: no such bundled {what} and no such file (bundled: "
                f"{', '.join(names)}; or give a path to a .json file)"
            )
        source, text = f"{path}.json", bundled.read_text("utf-8")
    else:
        file_path = Path(path)
        source = str(file_path)
        text = read_text(file_path, what, error)
    try:
        return json.loads(text), source
    except json.JSONDecodeError as exc:
        raise error(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc
