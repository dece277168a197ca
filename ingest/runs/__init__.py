"""Local benchmark runs: signed run files (DSSE + Ed25519) and imports of common tool outputs.

Every parser here is pure (bytes in, records out) so the raw store can be replayed offline.
"""
from ingest.runs.errors import RunRejected

__all__ = ["RunRejected"]
