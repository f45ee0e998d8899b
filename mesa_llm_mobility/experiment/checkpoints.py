"""What a checkpoint needs beside the pickled model: the memory snapshot and the ledger replay.

A run directory's checkpoint (:meth:`~.run_directory.RunDirectory.write_checkpoint`) holds the
model without its brain and memory store. Resuming it needs two more things, the same for every
model:

- the memory store as it was then: :func:`snapshot_memory` copies ``memory/`` to
  ``checkpoints/checkpoint_<n>_memory/`` before the checkpoint is indexed, and
  :func:`restore_memory` puts that copy back;
- the LLM answers already paid for after the checkpoint (the day or steps under way when the run
  stopped): :func:`replay_after` takes their records out of the ledger and indexes them, so
  the resumed brain answers the same requests again without calling the model.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.memory import MemoryStore

logger = logging.getLogger(__name__)


def snapshot_memory(run: RunDirectory, number: int, store: MemoryStore) -> str:
    """Flush ``store`` and copy ``memory/`` to checkpoint ``number``'s snapshot; returns its name.

    The copy goes through a temporary folder, so a crash never leaves a partial snapshot under
    that name. Write the checkpoint after it, so an indexed checkpoint always has its snapshot.
    """
    store.flush()
    snapshot = run.memory_snapshot_path(number)
    temporary = snapshot.with_name(f".{snapshot.name}.tmp")
    for folder in (temporary, snapshot):
        if folder.exists():
            shutil.rmtree(folder)
    shutil.copytree(run.memory_dir, temporary)
    os.replace(temporary, snapshot)
    return snapshot.name


def restore_memory(run: RunDirectory, number: int, embedding: str) -> MemoryStore:
    """Replace ``memory/`` by the snapshot of checkpoint ``number`` and open it.

    Args:
        run: The run directory.
        number: The checkpoint's number.
        embedding: The store's embedding setting.

    Raises:
        RunDirectoryError: If the snapshot is missing.
    """
    snapshot = run.memory_snapshot_path(number)
    if not snapshot.is_dir():
        raise RunDirectoryError(
            f"{snapshot}: memory snapshot of checkpoint {number} is missing"
        )
    if run.memory_dir.exists():
        shutil.rmtree(run.memory_dir)
    shutil.copytree(snapshot, run.memory_dir)
    return MemoryStore.open(run.memory_dir, embedding=embedding)


def replay_after(
    run: RunDirectory, later: Callable[[Mapping[str, Any]], bool]
) -> ReplayIndex:
    """Replay index of the ledger records that ``later`` picks, taken out of the ledger.

    The run's own records come first (those of the time under way when it stopped), then, for a
    fork, the source's records that ``later`` picks.

    Args:
        run: The run directory.
        later: Whether a record (by its ``tags``) comes after the checkpoint resumed from.
    """
    records_after: list[dict[str, Any]] = []
    if run.ledger_path.is_file():
        records = Ledger.read(run.ledger_path)
        kept = [r for r in records if not later(r)]
        records_after = [r for r in records if later(r)]
        if records_after:
            text = "".join(json.dumps(r) + "\n" for r in kept)
            temporary = run.ledger_path.with_name(f".{run.ledger_path.name}.tmp")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, run.ledger_path)
            logger.info(
                "%s: %d ledger records after the checkpoint will be replayed",
                run.ledger_path,
                len(records_after),
            )
    index = ReplayIndex(records_after, own_run=True)
    source = run.source_ledger_path
    if source is not None and source.is_file():
        index.add(r for r in Ledger.read(source) if later(r))
    return index


def record_tag(record: Mapping[str, Any], name: str) -> int:
    """A ledger record's time tag ``name`` (``day``, ``step``), 0 when it has none."""
    return int((record.get("tags") or {}).get(name, 0))
