"""The urban model's live and replay app: what it shows, computed apart from how it is shown.

- :mod:`.town_view`: :class:`~.town_view.TownView`, the town at one minute, from a live model or
  a saved run, and the metro trains running at a minute.
- :mod:`.town_map`: the network map (matplotlib): congestion, metro lines and trains,
  facilities with occupancy and queue counts, travellers as markers.
- :mod:`.saved_run`: a run directory opened read-only for replay.
- :mod:`.inspector`: what the inspector shows of one traveller.
- :mod:`.charts`: trips in progress, delay, departures, mode shares, LLM outcomes.
- :mod:`.components`: the Solara components of ``examples/gatsim_app.py``.
"""
