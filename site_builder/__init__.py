"""The reference site: static pages rendered from the published `site.*` tables and
exports/manifest.json alone (plain Python, no Dagster)."""
