"""What to tell someone whose model or hardware name matched no catalogue entry.

A hint names a catalogue entry only when the two names agree on what makes them the same thing:
for a model its family, its version and its parameter count (and the active parameters of a
mixture of experts); for hardware every number (generation, model number) and every word, once
vendor words, memory sizes and variant notes are set aside; a name two entries fit is no hint. Anything else would mislabel data if pasted (Apple M5 Max is not an M4
Max, Qwen3.5-35B-A3B is not Qwen3-30B-A3B), so the answer is then "no close match: add a
catalogue row", with the row to add. String similarity only orders the candidates that agree.

The rule is plain Python over the catalogue rows (dbt_project/seeds/*_catalogue.csv as dicts),
so `audit.unresolved_names` can apply the same rule in SQL (docs/ and the handover say how).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

# words that name no model: packaging, format and tuning suffixes
_MODEL_NOISE = {"instruct", "it", "chat", "gguf", "hf", "base", "preview", "latest", "model", "ud"}
_VENDOR_PREFIX = re.compile(r"^(?:[\w.-]+/)")  # an org/ repo prefix
_QUANT = re.compile(r"(?:^|[-_.\s])(?:ud-)?(?:i?q\d+_[a-z0-9_]+|f16|bf16|f32|fp16|fp8|mxfp4)$", re.I)
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([mbk])$")
_ACTIVE = re.compile(r"^a(\d+(?:\.\d+)?)b$")
_HW_NOISE = {"nvidia", "amd", "intel", "apple", "geforce", "radeon", "graphics", "gpu", "the", "with"}


@dataclass(frozen=True)
class ModelName:
    family: str | None
    version: str | None
    params_b: float | None
    active_b: float | None


def model_name_parts(name: str) -> ModelName:
    """`Qwen3.5-35B-A3B` -> (qwen, 3.5, 35, 3); `olmo-2-32b` -> (olmo, 2, 32, None);
    `facebook/opt-125m` -> (opt, None, 0.125, None); `gpt-oss-120b` -> (gpt-oss, None, 120, None)."""
    text = _VENDOR_PREFIX.sub("", name.strip().lower())
    text = re.sub(r"\.gguf$", "", text)
    text = re.sub(r"[-_.]\d{5}-of-\d{5}$", "", text)
    text = _QUANT.sub("", text)
    text = text.split(":")[0] if ":" in text and not re.search(r":\d", text) else text.replace(":", "-")
    tokens = [t for t in re.split(r"[-_\s]+", text) if t and t not in _MODEL_NOISE]
    family_words, version, params, active = [], None, None, None
    for tok in tokens:
        size, act = _SIZE.match(tok), _ACTIVE.match(tok)
        if act:
            active = float(act.group(1))
        elif size:
            scale = {"m": 1e-3, "k": 1e-6, "b": 1.0}[size.group(2)]
            params = params or float(size.group(1)) * scale
        elif re.fullmatch(r"v?\d+(?:\.\d+)*", tok) and params is None and version is None:
            version = tok.lstrip("v")
        else:
            m = re.fullmatch(r"([a-z]+)(\d+(?:\.\d+)*)", tok)
            if m and not family_words and version is None:  # qwen3.5, llama3, smollm2, phi4
                family_words.append(m.group(1))
                version = m.group(2)
            elif params is None:
                family_words.append(tok)
    return ModelName("-".join(family_words[:2]) or None, version, params, active)


def _params_agree(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 0.1 * max(a, b)


def models_agree(raw: ModelName, entry: ModelName) -> bool:
    return (raw.family is not None and raw.family == entry.family and raw.version == entry.version
            and _params_agree(raw.params_b, entry.params_b)
            and (raw.active_b is None or entry.active_b is None or _params_agree(raw.active_b, entry.active_b)))


def _hw_tokens(name: str) -> tuple[set[str], set[str]]:
    text = re.sub(r"\([^)]*\)", " ", name.lower())  # a catalogue's "(40-core GPU)" variant note
    text = re.sub(r"\b\d+\s*gb\b", " ", text)  # memory sizes vary by listing, not by chip
    tokens = [t for t in re.split(r"[^a-z0-9]+", text) if t and t not in _HW_NOISE]
    numbers = {t for t in tokens if re.search(r"\d", t)}
    return numbers, set(tokens) - numbers


def hardware_agree(raw_name: str, entry_name: str) -> bool:
    raw_numbers, raw_words = _hw_tokens(raw_name)
    entry_numbers, entry_words = _hw_tokens(entry_name)
    return bool(entry_numbers or entry_words) and raw_numbers == entry_numbers and entry_words == raw_words


@dataclass(frozen=True)
class Hint:
    closest: str | None  # a catalogue id, only when the names agree
    message: str


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


def _csv(value) -> str:
    text = "" if value is None else str(value)
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\n') else text


def model_hint(raw_name: str, catalogue: list[dict], params: int | None = None) -> Hint:
    """The catalogue model a raw name may be mapped to, or the model_catalogue.csv row to add.
    `params` is the parameter count the run reported (llama-bench model_n_params), if any."""
    raw = model_name_parts(raw_name)
    if params:
        raw = ModelName(raw.family, raw.version, params / 1e9, raw.active_b)
    agreeing = []
    for row in catalogue:
        entry = model_name_parts(row["name"])
        entry = ModelName(row.get("family") and entry.family, entry.version,
                          float(row["params_b"]) if row.get("params_b") else entry.params_b, entry.active_b)
        if models_agree(raw, entry):
            agreeing.append(row)
    if agreeing:
        best = max(agreeing, key=lambda r: SequenceMatcher(None, raw_name.lower(), r["name"].lower()).ratio())
        return Hint(best["model_id"], f"closest: {best['model_id']}; to map it, add to model_aliases.csv: "
                                      f"{_csv(raw_name)},{best['model_id']},<where the name comes from>")
    params_b = f"{raw.params_b:g}" if raw.params_b is not None else ""
    row = ",".join(_csv(v) for v in (_slug(raw_name.split("/")[-1]), raw_name.split("/")[-1], raw.family or "",
                                     params_b))
    return Hint(None, "no close match: add a catalogue row to model_catalogue.csv "
                      f"(model_id,name,family,params_b,...): {row},,,,,<source of the facts>")


def hardware_hint(raw_name: str, catalogue: list[dict]) -> Hint:
    agreeing = [row for row in catalogue if hardware_agree(raw_name, row["name"])]
    if len(agreeing) > 1:  # variants the name does not tell apart (M4 Max 32-core / 40-core)
        ids = ", ".join(r["hardware_id"] for r in agreeing[:5])
        return Hint(None, f"several catalogue rows fit ({ids}): add the alias of the one this machine is "
                          "to hardware_aliases.csv")
    if agreeing:
        best = max(agreeing, key=lambda r: SequenceMatcher(None, raw_name.lower(), r["name"].lower()).ratio())
        return Hint(best["hardware_id"], f"closest: {best['hardware_id']}; to map it, add to hardware_aliases.csv: "
                                         f"{_csv(raw_name)},{best['hardware_id']},<where the name comes from>")
    vendor = raw_name.split()[0] if raw_name.split() else ""
    row = ",".join(_csv(v) for v in (_slug(raw_name), raw_name, vendor))
    return Hint(None, "no close match: add a catalogue row to hardware_catalogue.csv "
                      f"(hardware_id,name,vendor,kind,memory_gb,memory_bandwidth_gbps,tdp_w,...): "
                      f"{row},<gpu|soc|cpu>,<memory_gb>,<bandwidth>,<tdp_w>,,<source of the facts>")
