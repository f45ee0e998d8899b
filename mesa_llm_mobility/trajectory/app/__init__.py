"""The trajectory explorer app (``examples/trajgen_app.py``): real against generated days.

- :mod:`.session`: :class:`~.session.TrajectorySession`, the real and generated days of a
  population (a synthetic city generated offline, a user's history, or a saved run) and what
  the app derives from them once (metrics, detector scores).
- :mod:`.views`: one individual's days as tables, a map, a Gantt timeline and the metric table.
- :mod:`.components`: the Solara components.
"""
