"""Pin the golden outputs of tests/goldens/outputs.py under tests/goldens/data.

Run only when a change is meant to change a number, and say why in the commit and CHANGELOG.md:

    .venv/bin/python scripts/pin_goldens.py                  # every case
    .venv/bin/python scripts/pin_goldens.py trajectory_rules # only the cases named
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.goldens import outputs


def _urban_rules() -> dict[str, pd.DataFrame]:
    summary, tables = outputs.urban_rule_run()
    (outputs.DATA / "urban_rules_summary.json").write_text(
        json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return tables


CASES: dict[str, Callable[[], dict[str, pd.DataFrame]]] = {
    "urban_rules": _urban_rules,
    "evacuation_rules": outputs.evacuation_rule_runs,
    "urban_llm": outputs.urban_llm_run,
    "evacuation_llm": outputs.evacuation_llm_run,
    "trajectory_rules": outputs.trajectory_rule_runs,
    "trajectory_llm": outputs.trajectory_llm_run,
}
"""Each golden case and the function that runs it."""


def main(names: list[str]) -> None:
    """Run the named golden cases (every case when none is named) and write their outputs."""
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        sys.exit(
            f"pin_goldens: no case {', '.join(unknown)}; cases: {', '.join(CASES)}"
        )
    outputs.DATA.mkdir(parents=True, exist_ok=True)
    for case in names or CASES:
        for name, frame in CASES[case]().items():
            path = outputs.DATA / f"{case}_{name}.parquet"
            frame.to_parquet(path, index=False, compression="zstd")
            print(f"{path}: {len(frame)} rows")


if __name__ == "__main__":
    main(sys.argv[1:])
