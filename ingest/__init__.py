"""Fetching, storing and parsing the sources. Plain Python: no Dagster import here."""
