"""The exceptions of the runs source: RunRejected for one refused input (every parser raises
it), RunIntakeError when a whole intake cannot start."""
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


class RunIntakeError(Exception):
    """A batch of files cannot be received at all (an unusable trusted_keys.json); the message
    is one line for the user. The command line prints it and exits 1."""
