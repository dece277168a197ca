"""Project scripts run from the project root with `python -m scripts.<...>`; not installed."""
