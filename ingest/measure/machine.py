"""What the run was measured on: GPU(s), CPU, RAM, OS, and the serving engine.

Each probe is best effort: a missing tool or an odd output means "unknown", never a failure.
Parsers are separate pure functions over the tools' real output formats so they are testable
without the hardware.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass

CPU_ONLY = "CPU only"
_TIMEOUT_S = 10


@dataclass
class Gpus:
    name: str  # CPU_ONLY when no GPU was found
    count: int | None = None
    memory_gb: float | None = None  # per GPU


def _run(argv: list[str]) -> str | None:
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


# ---- GPUs --------------------------------------------------------------------------------
def parse_nvidia_smi(text: str) -> Gpus | None:
    """`nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits` (MiB)."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0]:
            try:
                rows.append((parts[0], float(parts[1]) / 1024))
            except ValueError:
                rows.append((parts[0], None))
    if not rows:
        return None
    return _summarise(rows)


def parse_rocm_smi(text: str) -> Gpus | None:
    """`rocm-smi --showproductname --showmeminfo vram --json`: {"card0": {...}, ...}."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    rows = []
    for card, info in sorted(doc.items()):
        if not card.startswith("card") or not isinstance(info, dict):
            continue
        name = info.get("Card Series") or info.get("Card series") or info.get("Card Model") \
            or info.get("Device Name") or info.get("Card SKU")
        mem = info.get("VRAM Total Memory (B)")
        try:
            mem_gb = int(mem) / 1024**3 if mem is not None else None
        except (TypeError, ValueError):
            mem_gb = None
        if name:
            rows.append((str(name).strip(), mem_gb))
    return _summarise(rows) if rows else None


def parse_system_profiler(text: str, ram_gb: float | None = None) -> Gpus | None:
    """`system_profiler SPDisplaysDataType -json`. Apple silicon shares RAM with its GPU."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    rows = []
    for item in doc.get("SPDisplaysDataType") or []:
        name = item.get("sppci_model") or item.get("_name")
        if not name:
            continue
        vram = item.get("spdisplays_vram") or item.get("spdisplays_vram_shared") or ""
        m = re.match(r"\s*([\d.]+)\s*(GB|MB)", str(vram))
        if m:
            mem_gb = float(m.group(1)) / (1024 if m.group(2) == "MB" else 1)
        else:
            mem_gb = ram_gb if str(name).startswith("Apple") else None  # unified memory
        rows.append((str(name).strip(), mem_gb))
    return _summarise(rows) if rows else None


def _summarise(rows: list[tuple[str, float | None]]) -> Gpus:
    names = [r[0] for r in rows]
    # a mixed machine is named by its GPUs in order; a uniform one by the model once
    name = names[0] if len(set(names)) == 1 else " + ".join(names)
    mems = [r[1] for r in rows if r[1] is not None]
    mem = round(min(mems), 2) if mems else None
    return Gpus(name=name, count=len(rows), memory_gb=mem)


def probe_gpus(ram_gb: float | None = None) -> Gpus:
    out = _run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"])
    if out and (g := parse_nvidia_smi(out)):
        return g
    out = _run(["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"])
    if out and (g := parse_rocm_smi(out)):
        return g
    out = _run(["system_profiler", "SPDisplaysDataType", "-json"])
    if out and (g := parse_system_profiler(out, ram_gb)):
        return g
    return Gpus(CPU_ONLY)


# ---- CPU, RAM, OS ------------------------------------------------------------------------
def probe_cpu() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return " ".join(line.split(":", 1)[1].split()) or None
    except OSError:
        pass
    out = _run(["sysctl", "-n", "machdep.cpu.brand_string"])
    if out and out.strip():
        return out.strip()
    return platform.processor() or None


def probe_ram_gb() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)  # kB -> GiB
    except (OSError, ValueError, IndexError):
        pass
    out = _run(["sysctl", "-n", "hw.memsize"])
    if out and out.strip().isdigit():
        return round(int(out.strip()) / 1024**3, 1)
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3, 1)
    except (ValueError, OSError, AttributeError):
        return None


def probe_os() -> str:
    system = platform.system()
    if system == "Linux":
        try:
            pretty = platform.freedesktop_os_release().get("PRETTY_NAME")
        except OSError:
            pretty = None
        return f"Linux {platform.release()}" + (f" ({pretty})" if pretty else "")
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]}".strip()
    return f"{system} {platform.release()}".strip()


def probe_machine(country: str | None = None) -> dict:
    """The payload's `machine` object (keys with unknown values left out)."""
    ram = probe_ram_gb()
    gpus = probe_gpus(ram)
    machine = {"gpu": gpus.name, "gpu_count": gpus.count, "gpu_memory_gb": gpus.memory_gb,
               "cpu": probe_cpu(), "ram_gb": ram, "os": probe_os(), "country": country}
    return {k: v for k, v in machine.items() if v is not None}


# ---- engine ------------------------------------------------------------------------------
_LLAMA_BUILD = re.compile(r"^b(\d+)(?:-([0-9a-f]+))?$")


def engine_from_fingerprint(fingerprint: str | None) -> tuple[str, str] | None:
    """llama-server sends system_fingerprint "b<build>-<commit>"."""
    if fingerprint and _LLAMA_BUILD.fullmatch(fingerprint.strip()):
        return "llama.cpp", fingerprint.strip()
    return None


def probe_engine(client, fingerprint: str | None = None, owned_by: str | None = None) -> dict:
    """{"name", "version"} from what the server says about itself, or {} when it says nothing."""
    found = engine_from_fingerprint(fingerprint)
    if found:
        return {"name": found[0], "version": found[1]}
    props = client.get_json("/props")
    if isinstance(props, dict) and (props.get("build_info") or "default_generation_settings" in props):
        build = props.get("build_info")
        return {"name": "llama.cpp", "version": str(build)} if build else {"name": "llama.cpp"}
    ollama = client.get_json("/api/version")
    if isinstance(ollama, dict) and isinstance(ollama.get("version"), str):
        return {"name": "ollama", "version": ollama["version"]}
    models = client.get_json("/v1/models")
    owners = set()
    if isinstance(models, dict):
        owners = {str(m.get("owned_by", "")).lower() for m in models.get("data") or [] if isinstance(m, dict)}
    if "vllm" in owners:
        version = client.get_json("/version")
        v = version.get("version") if isinstance(version, dict) else None
        return {"name": "vllm", "version": v} if v else {"name": "vllm"}
    if "llamacpp" in owners:
        return {"name": "llama.cpp"}
    if client.get_json("/api/v0/models") is not None:
        return {"name": "lmstudio"}
    return {}


_QUANT = re.compile(r"(?i)(?:^|[-_.])((?:IQ|Q)\d(?:_[A-Z0-9]+)*|F16|BF16|F32|FP16|FP8|MXFP4)(?=[-_.]|$)")


def quant_from_file(file_name: str | None) -> str | None:
    """`Llama-3.1-8B-Instruct-Q4_K_M.gguf` -> `Q4_K_M`."""
    if not file_name:
        return None
    stem = re.sub(r"(?i)\.gguf$", "", os.path.basename(file_name))
    found = _QUANT.findall(stem)
    return found[-1].upper() if found else None


def probe_model_file(client) -> str | None:
    """The model file the server loaded, when it says (llama-server /props model_path)."""
    props = client.get_json("/props")
    if isinstance(props, dict) and isinstance(props.get("model_path"), str):
        return props["model_path"]
    return None
