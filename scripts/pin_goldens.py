"""Pin the golden outputs of tests/goldens/outputs.py under tests/goldens/data.

Run only when a change is meant to change a number, and say why in the commit and CHANGELOG.md:

    .venv/bin/python scripts/pin_goldens.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.goldens import outputs


def main() -> None:
    """Run every golden case and write its outputs."""
    outputs.DATA.mkdir(parents=True, exist_ok=True)
    summary, tables = outputs.urban_rule_run()
    (outputs.DATA / "urban_rules_summary.json").write_text(
        json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    cases = {
        "urban_rules": tables,
        "evacuation_rules": outputs.evacuation_rule_runs(),
        "urban_llm": outputs.urban_llm_run(),
        "evacuation_llm": outputs.evacuation_llm_run(),
    }
    for case, frames in cases.items():
        for name, frame in frames.items():
            path = outputs.DATA / f"{case}_{name}.parquet"
            frame.to_parquet(path, index=False, compression="zstd")
            print(f"{path}: {len(frame)} rows")


if __name__ == "__main__":
    main()
