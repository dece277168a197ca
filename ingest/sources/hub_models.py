"""Hugging Face Hub model resolution: the repos that runs name, followed to the model they package.

Bounded: only repositories a landed run names (a run file's `model.repo`, an Ollama tag
`hf.co/<org>/<repo>:<quant>` given as the model name) are asked about. For each one:
  GET /api/models/<repo>                       model info: cardData.base_model, licence, tags,
                                               safetensors.total (parameters), gguf (GGUF repos)
  GET /api/models/<repo>/tree/main?recursive=true   its files (sizes, quantizations)
then, following `cardData.base_model` (at most MAX_DEPTH hops: GGUF repo -> the model it
quantizes -> the model that one was fine-tuned from), the model info and config.json of each.
Every call goes through FetchContext.get (polite client, raw store, ETag/Last-Modified
conditional GETs); a 304 reads the stored body to keep following the chain.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

import duckdb
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.http import FetchError
from ingest.landing.schema import LandingSchema
from ingest.source import FetchContext, PayloadRejected

MAX_DEPTH = 3
# /api/models/<owner>/<name> with nothing after it (a tree listing has /tree/...)
MODEL_INFO_URL_RE = re.compile(r"/api/models/([^/?]+/[^/?]+)/?(?:\?.*)?$")
OLLAMA_HF_TAG_RE = re.compile(r"^(?:https?://)?(?:hf\.co|huggingface\.co)/([^/:\s]+/[^/:\s]+?)(?::[^/\s]+)?$",
                              re.IGNORECASE)
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class HuggingFaceModelInfosSchema(LandingSchema):
    repo: Series[str] = pa.Field(description="Repository the model info describes, owner/name")
    base_model: Series[str] = pa.Field(nullable=True, description="cardData.base_model (the first when a list)")
    base_models: Series[str] = pa.Field(nullable=True, description="Every cardData.base_model, ';'-separated (merges name several)")
    base_model_relation: Series[str] = pa.Field(
        nullable=True, description="quantized | finetune | merge | adapter: cardData.base_model_relation, else from the tags")
    license: Series[str] = pa.Field(nullable=True, description="cardData.license (license_name when 'other')")
    pipeline_tag: Series[str] = pa.Field(nullable=True, description="Task the repo declares")
    library_name: Series[str] = pa.Field(nullable=True, description="Library the repo declares (transformers, gguf, ...)")
    tags: Series[str] = pa.Field(nullable=True, description="Hub tags, ';'-separated")
    architectures: Series[str] = pa.Field(nullable=True, description="config.architectures as the info repeats it, ';'-separated")
    model_type: Series[str] = pa.Field(nullable=True, description="config.model_type as the info repeats it")
    safetensors_params: Series[pd.Int64Dtype] = pa.Field(
        nullable=True, ge=0, le=10**14, description="safetensors.total: parameters in the safetensors weights")
    gguf_params: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=10**14, description="gguf.total: parameters of the GGUF")
    gguf_architecture: Series[str] = pa.Field(nullable=True, description="gguf.architecture (llama.cpp's name)")
    gguf_context_length: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, description="gguf.context_length")
    is_gated: Series[bool] = pa.Field(description="The repo asks for an access request (its files may answer 401)")


def _as_list(value) -> list[str]:
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [str(v).strip() for v in value if isinstance(v, str) and v.strip()]
    return []


def _relation(card: dict, tags: list[str], base: str | None) -> str | None:
    declared = card.get("base_model_relation")
    if isinstance(declared, str) and declared:
        return declared.lower()
    # the Hub tags a derived repo "base_model:<relation>:<base repo>"
    for tag in tags:
        parts = tag.split(":")
        if len(parts) == 3 and parts[0] == "base_model" and base and parts[2].lower() == base.lower():
            return parts[1].lower()
    return None


def parse_model_info(repo: str, data) -> pd.DataFrame:
    """One row from the body of GET /api/models/<repo>."""
    if not isinstance(data, dict) or not isinstance(data.get("id", repo), str):
        raise PayloadRejected("model info is not a JSON object", "payload_shape")
    if "error" in data and "id" not in data:
        raise PayloadRejected(f"model info is an error: {str(data['error'])[:200]}", "payload_shape")
    card = data.get("cardData") if isinstance(data.get("cardData"), dict) else {}
    tags = [t for t in data.get("tags") or [] if isinstance(t, str)]
    bases = [b for b in _as_list(card.get("base_model")) if _REPO_RE.match(b)]
    license_ = card.get("license")
    if isinstance(license_, list):
        license_ = license_[0] if license_ else None
    if license_ == "other" and isinstance(card.get("license_name"), str):
        license_ = card["license_name"]
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    safetensors = data.get("safetensors") if isinstance(data.get("safetensors"), dict) else {}
    gguf = data.get("gguf") if isinstance(data.get("gguf"), dict) else {}
    row = {
        "repo": str(data.get("id") or repo),
        "base_model": bases[0] if bases else None,
        "base_models": ";".join(bases) or None,
        "base_model_relation": _relation(card, tags, bases[0] if bases else None),
        "license": str(license_) if license_ else None,
        "pipeline_tag": data.get("pipeline_tag"),
        "library_name": data.get("library_name"),
        "tags": ";".join(tags) or None,
        "architectures": ";".join(_as_list(config.get("architectures"))) or None,
        "model_type": config.get("model_type") if isinstance(config.get("model_type"), str) else None,
        "safetensors_params": safetensors.get("total") if isinstance(safetensors.get("total"), int) else None,
        "gguf_params": gguf.get("total") if isinstance(gguf.get("total"), int) else None,
        "gguf_architecture": gguf.get("architecture") if isinstance(gguf.get("architecture"), str) else None,
        "gguf_context_length": gguf.get("context_length") if isinstance(gguf.get("context_length"), int) else None,
        "is_gated": bool(data.get("gated")),
    }
    return pd.DataFrame([row], columns=list(HuggingFaceModelInfosSchema.to_schema().columns))


def repo_of_name(name: str | None) -> str | None:
    """The repository an Ollama `hf.co/<org>/<repo>:<quant>` tag names, else None."""
    if not name:
        return None
    match = OLLAMA_HF_TAG_RE.match(name.strip())
    return match.group(1) if match else None


def named_repos(landing_root: Path) -> list[str]:
    """Repositories the landed runs name, sorted: the bound on what the Hub is asked about."""
    folder = Path(landing_root) / "runs" / "runs"
    if not any(folder.glob("*.parquet")):
        return []
    glob = str(folder / "*.parquet").replace("'", "''")
    con = duckdb.connect()
    try:
        cols = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{glob}', union_by_name=true)").fetchall()}
        wanted = [c for c in ("model_repo", "model_name") if c in cols]
        rows = con.execute(f"SELECT DISTINCT {', '.join(wanted)} FROM read_parquet('{glob}', union_by_name=true)"
                           ).fetchall() if wanted else []
    finally:
        con.close()
    found = set()
    for row in rows:
        values = dict(zip(wanted, row))
        repo = values.get("model_repo")
        if isinstance(repo, str) and _REPO_RE.match(repo.strip()):
            found.add(repo.strip())
        tagged = repo_of_name(values.get("model_name"))
        if tagged and _REPO_RE.match(tagged):
            found.add(tagged)
    return sorted(found)


def _get_json(ctx: FetchContext, url: str):
    """GET url through the polite client; the stored body when the Hub answers 304."""
    entry, body = ctx.get(url, ext="json")
    if body is None:
        body = ctx.store.read(entry)
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def fetch_named_models(ctx: FetchContext, repos: list[str], *, listed: set[str], configured: set[str],
                       fetch_tree) -> None:
    """Model info, listing and config.json of each named repo and of its base-model chain.

    `listed` / `configured` hold the repos (lower case) whose listing / config.json this fetch
    already asked for; `fetch_tree(ctx, repo)` lists one repo (the source's paginated walk).
    """
    seen: set[str] = set()
    for repo in repos:
        current, depth = repo, 0
        while current and current.lower() not in seen and depth <= MAX_DEPTH:
            seen.add(current.lower())
            try:
                data = _get_json(ctx, f"{ctx.base_url}/api/models/{quote(current)}")
            except FetchError as exc:
                if exc.status in (401, 403, 404):
                    ctx.log(f"huggingface: skipped model info of {current}: {exc.what}")
                    break
                raise
            info = parse_model_info(current, data).iloc[0] if isinstance(data, dict) else None
            is_gguf = info is not None and (info.gguf_params is not None and not pd.isna(info.gguf_params)
                                            or "gguf" in str(info.tags or "").lower().split(";"))
            if depth == 0 and current.lower() not in listed:
                listed.add(current.lower())
                try:
                    fetch_tree(ctx, current)
                except FetchError as exc:
                    if exc.status not in (401, 403, 404):
                        raise
                    ctx.log(f"huggingface: skipped listing of {current}: {exc.what}")
            if not is_gguf and current.lower() not in configured:
                configured.add(current.lower())
                try:
                    ctx.get(f"{ctx.base_url}/{quote(current)}/resolve/main/config.json", ext="json")
                except FetchError as exc:
                    if exc.status not in (401, 403, 404):
                        raise
                    ctx.log(f"huggingface: skipped config of {current}: {exc.what}")
            base = info.base_model if info is not None else None
            current, depth = (base if isinstance(base, str) else None), depth + 1
