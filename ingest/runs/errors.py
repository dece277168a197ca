"""The one exception every run parser raises for input it refuses."""
from __future__ import annotations

from ingest.source import PayloadRejected


class RunRejected(PayloadRejected):
    """A run file or tool output that cannot be accepted; `reason` is one line for the user.

    A PayloadRejected, so the Lander quarantines the payload with this reason.
    """

    def __init__(self, reason: str, check: str = "run_rejected"):
        super().__init__(reason, check)

    def __str__(self) -> str:
        return self.reason
