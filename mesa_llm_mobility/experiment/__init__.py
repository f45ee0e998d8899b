"""Experiment infrastructure shared by every model: run directories, resume and fork.

Submodules are imported on demand so that ``import mesa_llm_mobility.experiment`` stays light:

- :mod:`.run_directory`: :class:`~.run_directory.RunDirectory` (config, metadata, ledger, memory,
  Parquet tables, checkpoints, plots of one run) and :func:`~.run_directory.fork`.
"""

from __future__ import annotations
