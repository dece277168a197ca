"""GPU power (and memory in use) sampled from `nvidia-smi` while the measured repetitions run.

Only a sensor reading is recorded here (method `sensor`); machines without one record nothing
and the warehouse models their power from the hardware's TDP instead. The peak of the GPUs'
`memory.used` is kept too: it is what the run's model, KV cache and buffers took at most (plus
whatever else runs on the GPUs), the measured side of the warehouse's memory estimate.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field


def parse_readings(text: str) -> tuple[float | None, int | None]:
    """`nvidia-smi --query-gpu=power.draw,memory.used --format=csv,noheader,nounits`.

    One line per GPU; returns (watts summed, memory used summed in bytes), each None when any
    GPU reports it as "[N/A]" or the output is empty.
    """
    watts, mib = 0.0, 0.0
    watts_ok = mem_ok = None
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        try:
            watts += float(parts[0])
            watts_ok = True if watts_ok is None else watts_ok
        except (ValueError, IndexError):
            watts_ok = False
        try:
            mib += float(parts[1])
            mem_ok = True if mem_ok is None else mem_ok
        except (ValueError, IndexError):
            mem_ok = False
    return (watts if watts_ok else None), (int(mib * 1024 * 1024) if mem_ok else None)


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
    peak_memory_bytes: int | None = None

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_at = 0.0
        self._stopped_at = 0.0

    @classmethod
    def available(cls, command: str = "nvidia-smi") -> bool:
        return shutil.which(command) is not None

    def read_once(self) -> tuple[float | None, int | None]:
        exe = shutil.which(self.command)
        if exe is None:
            return None, None
        try:
            out = subprocess.run([exe, "--query-gpu=power.draw,memory.used", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None, None
        return parse_readings(out.stdout) if out.returncode == 0 else (None, None)

    def _loop(self) -> None:
        while not self._stop.is_set():
            watts, memory = self.read_once()
            if watts is not None:
                self.samples.append((time.perf_counter(), watts))
            if memory is not None:
                self.peak_memory_bytes = max(memory, self.peak_memory_bytes or 0)
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
