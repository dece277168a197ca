"""GPU power sampled from `nvidia-smi` while the measured repetitions run.

Only a sensor reading is recorded here (method `sensor`); machines without one record nothing
and the warehouse models their power from the hardware's TDP instead.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field


def parse_power_draw(text: str) -> float | None:
    """`nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits`: one line per GPU, summed.

    "[N/A]" / "[Not Supported]" lines (some laptop and older GPUs) give None.
    """
    total = 0.0
    seen = False
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            total += float(line)
            seen = True
        except ValueError:
            return None
    return total if seen else None


@dataclass
class PowerReading:
    avg_watts: float
    energy_j: float
    n_samples: int
    seconds: float

    def as_payload(self) -> dict:
        return {"method": "sensor", "avg_watts": round(self.avg_watts, 2), "energy_j": round(self.energy_j, 2)}


@dataclass
class PowerSampler:
    """Call start() before the measured repetitions and stop() after them."""

    interval_s: float = 0.2
    command: str = "nvidia-smi"
    samples: list[tuple[float, float]] = field(default_factory=list)  # (perf_counter, watts)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_at = 0.0
        self._stopped_at = 0.0

    @classmethod
    def available(cls, command: str = "nvidia-smi") -> bool:
        return shutil.which(command) is not None

    def read_once(self) -> float | None:
        exe = shutil.which(self.command)
        if exe is None:
            return None
        try:
            out = subprocess.run([exe, "--query-gpu=power.draw", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return parse_power_draw(out.stdout) if out.returncode == 0 else None

    def _loop(self) -> None:
        while not self._stop.is_set():
            watts = self.read_once()
            if watts is not None:
                self.samples.append((time.perf_counter(), watts))
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._started_at = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, name="power-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> PowerReading | None:
        self._stop.set()
        self._stopped_at = time.perf_counter()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return summarise(self.samples, self._started_at, self._stopped_at)


def summarise(samples: list[tuple[float, float]], start: float, stop: float) -> PowerReading | None:
    """Average watts (time-weighted) and energy over [start, stop].

    Each reading holds until the next one (the first also covers the time before it), so the
    energy is the area under the step function and avg = energy / duration.
    """
    pts = sorted((t, w) for t, w in samples if start <= t <= stop)
    duration = stop - start
    if not pts or duration <= 0:
        return None
    energy = pts[0][1] * (pts[0][0] - start)
    for (t0, w0), (t1, _) in zip(pts, pts[1:]):
        energy += w0 * (t1 - t0)
    energy += pts[-1][1] * (stop - pts[-1][0])
    return PowerReading(avg_watts=energy / duration, energy_j=energy, n_samples=len(pts), seconds=duration)
