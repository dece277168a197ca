"""Scripts that regenerate the offline recordings in ingest/snapshots/ (see README.md here)."""
