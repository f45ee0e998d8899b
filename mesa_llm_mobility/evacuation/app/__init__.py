"""The evacuation app (``examples/evacuation_app.py``): live model, inspector, plots, replay."""
