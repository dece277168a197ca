"""Dagster definitions, publish, and the `benchwh` CLI."""
