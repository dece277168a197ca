"""The `runs` source: local benchmark runs, signed run files (DSSE + Ed25519) and imports of
common tool outputs (README.md). RunsSource is in source.py, `benchwh runs add` in add.py.

Every parser here is pure (bytes in, records out) so the raw store can be replayed offline.
"""
from ingest.sources.runs.errors import RunIntakeError, RunRejected

__all__ = ["RunIntakeError", "RunRejected"]
