"""Hugging Face: GGUF file listings (sizes, quantization) and base-model config.json shapes.

fetch() walks the GGUF repos of the model catalogue (`dbt_project/seeds/model_catalogue.csv`,
columns `hf_gguf_repos` and `hf_base_repo`; a built-in list when the seed is absent):
  GET /api/models/<repo>/tree/main?recursive=true   paginated, `Link: <...>; rel="next"`
  GET /<base_repo>/resolve/main/config.json
then resolves the repos landed runs name through the Hub (ingest/sources/hub_models.py):
  GET /api/models/<repo>                            model info (card base_model, licence, params)
parse() reads one stored payload and tells which kind it is from its URL.

One landed row per file, not per build: a split build (`-00001-of-00003`) may straddle two
listing pages, so the parts are summed into one build in dbt (int_huggingface__builds).
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.config import dbt_project_dir
from ingest.http import FetchError
from ingest.landing.schema import LandingSchema
from ingest.raw_store import RawEntry
from ingest.source import Entity, FetchContext, PayloadRejected, Source
from ingest.sources.hub_models import MODEL_INFO_URL_RE, HuggingFaceModelInfosSchema, fetch_named_models, named_repos, parse_model_info

# Used when the catalogue seed is not there yet: (gguf repos, base repo).
BUILTIN_REPOS: list[tuple[list[str], str]] = [
    (["bartowski/Llama-3.2-1B-Instruct-GGUF"], "meta-llama/Llama-3.2-1B-Instruct"),
    (["bartowski/Llama-3.2-3B-Instruct-GGUF"], "meta-llama/Llama-3.2-3B-Instruct"),
    (["bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"], "meta-llama/Llama-3.1-8B-Instruct"),
    (["bartowski/Qwen2.5-7B-Instruct-GGUF"], "Qwen/Qwen2.5-7B-Instruct"),
    (["bartowski/Qwen2.5-14B-Instruct-GGUF"], "Qwen/Qwen2.5-14B-Instruct"),
    (["ggml-org/gemma-3-4b-it-GGUF"], "google/gemma-3-4b-it"),
]

# Quantization names as packagers write them in file names, most specific first.
_QUANT_PATTERNS = [
    r"UD-(?:IQ|Q)\d_[A-Z0-9_]*?(?:XXS|XS|XL|S|M|L|0|1)",  # unsloth dynamic: UD-Q4_K_XL, UD-IQ1_S
    r"IQ\d_(?:XXS|XS|NL|S|M|L)",  # IQ3_XXS, IQ4_XS, IQ4_NL, IQ2_M
    r"TQ\d_\d",  # ternary TQ1_0
    r"Q\d_K_(?:XL|L|M|S)",  # Q4_K_M, Q4_K_L, Q3_K_XL
    r"Q\d_\d_\d_\d",  # ARM repacks Q4_0_4_4
    r"Q\d_K",  # Q6_K
    r"Q\d_\d",  # Q4_0, Q8_0, Q1_0
    r"MXFP4(?:_MOE)?",
    r"BF16",
    r"F16|FP16",
    r"F32|FP32",
]
_QUANT_RE = re.compile(
    r"(?:^|[-_.])(" + "|".join(_QUANT_PATTERNS) + r")(?=$|[-_.])", re.IGNORECASE)
_SPLIT_RE = re.compile(r"-(\d{5})-of-(\d{5})(?=\.gguf$)", re.IGNORECASE)
_TREE_URL_RE = re.compile(r"/api/models/([^/?]+/[^/?]+)/tree/")
_CONFIG_URL_RE = re.compile(r"/([^/?]+/[^/?]+)/resolve/[^/?]+/config\.json")
_NEXT_LINK_RE = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?', re.IGNORECASE)


def parse_quant(file_name: str) -> str | None:
    """The quantization in a GGUF file name, canonical upper case ('Q4_K_M', 'UD-Q4_K_XL', 'F16')."""
    stem = _SPLIT_RE.sub("", Path(file_name).name)
    stem = re.sub(r"\.gguf$", "", stem, flags=re.IGNORECASE)
    match = _QUANT_RE.search(stem)
    if not match:
        return None
    quant = match.group(1).upper()
    return {"FP16": "F16", "FP32": "F32"}.get(quant, quant)


def split_parts(file_name: str) -> tuple[int | None, int | None, str]:
    """(part index, part count, build file name) of a possibly split GGUF file."""
    match = _SPLIT_RE.search(file_name)
    if not match:
        return None, None, file_name
    return int(match.group(1)), int(match.group(2)), _SPLIT_RE.sub("", file_name)


def is_model_file(path: str) -> bool:
    """A GGUF holding a language model's weights (not a vision projector or an imatrix)."""
    name = Path(path).name.lower()
    return name.endswith(".gguf") and not name.startswith("mmproj") and "imatrix" not in name


def next_link(link_header: str | None) -> str | None:
    if not link_header:
        return None
    match = _NEXT_LINK_RE.search(link_header)
    return match.group(1) if match else None


class HuggingFaceFilesSchema(LandingSchema):
    repo: Series[str] = pa.Field(description="GGUF repository, owner/name")
    path: Series[str] = pa.Field(description="Path of the file in the repository")
    file_name: Series[str] = pa.Field(description="Base name of the file")
    build_file_name: Series[str] = pa.Field(
        description="File name of the build: a split part's name without -0000k-of-0000N")
    size_bytes: Series[int] = pa.Field(ge=0, le=2 * 10**12, description="File size in bytes (LFS size)")
    quant: Series[str] = pa.Field(nullable=True, description="Quantization parsed from the file name")
    split_index: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=1, description="Part number of a split file")
    split_count: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=1, description="Number of parts of a split file")
    lfs_sha256: Series[str] = pa.Field(nullable=True, description="sha256 of the file content (LFS oid)")



class HuggingFaceConfigsSchema(LandingSchema):
    repo: Series[str] = pa.Field(description="Base model repository, owner/name")
    model_type: Series[str] = pa.Field(nullable=True, description="transformers model_type")
    num_hidden_layers: Series[int] = pa.Field(gt=0, le=1000, description="Transformer layers")
    num_attention_heads: Series[pd.Int64Dtype] = pa.Field(nullable=True, gt=0, description="Query heads")
    num_key_value_heads: Series[int] = pa.Field(gt=0, le=1000, description="KV heads (GQA); = attention heads when absent")
    head_dim: Series[int] = pa.Field(gt=0, le=4096, description="Per-head dimension")
    is_head_dim_derived: Series[bool] = pa.Field(description="head_dim computed as hidden_size / num_attention_heads")
    hidden_size: Series[pd.Int64Dtype] = pa.Field(nullable=True, gt=0, description="Model width")
    max_position_embeddings: Series[int] = pa.Field(gt=0, le=100_000_000, description="Trained context (tokens)")
    sliding_window: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="Sliding attention window, if any")



def read_catalogue(path: Path) -> list[tuple[list[str], str | None]]:
    """(gguf repos, base repo) per catalogue row; repos may be separated by ; | , or spaces."""
    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            repos = [r for r in re.split(r"[;|,\s]+", (row.get("hf_gguf_repos") or "").strip()) if r]
            base = (row.get("hf_base_repo") or "").strip() or None
            if repos or base:
                out.append((repos, base))
    return out


class HuggingFaceSource(Source):
    name = "huggingface"
    license = "Per repository (model licences); listings and configs from the Hugging Face Hub API"
    attribution = "Hugging Face Hub (huggingface.co)"
    kind = "incremental"  # each payload is one page or one config, not the whole dataset
    freshness_warn_hours = 24 * 8
    freshness_error_hours = 24 * 60
    parser_version = "1"
    entities = (
        Entity("files", HuggingFaceFilesSchema, "GGUF files of the catalogue's repos with sizes and quantization"),
        Entity("configs", HuggingFaceConfigsSchema, "Architecture numbers of the base models (config.json)"),
        Entity("model_infos", HuggingFaceModelInfosSchema, "Model info of the repos runs name and their base models (card, licence, parameters)"),
    )

    def __init__(self, catalogue: Path | None = None, repos: list[tuple[list[str], str | None]] | None = None):
        self._catalogue = catalogue
        self._repos = repos

    def repos(self) -> list[tuple[list[str], str | None]]:
        if self._repos is not None:
            return self._repos
        path = self._catalogue or dbt_project_dir() / "seeds" / "model_catalogue.csv"
        if path.is_file():
            found = read_catalogue(path)
            if found:
                return found
        return [(list(g), b) for g, b in BUILTIN_REPOS]

    # ---- fetch ---------------------------------------------------------------------------
    def fetch(self, ctx: FetchContext) -> None:
        gguf_repos: list[str] = []
        base_repos: list[str] = []
        for repos, base in self.repos():
            gguf_repos += [r for r in repos if r not in gguf_repos]
            if base and base not in base_repos:
                base_repos.append(base)
        for repo in gguf_repos:
            try:
                self._fetch_tree(ctx, repo)
            except FetchError as exc:
                # a renamed, removed or gated repo: skip it, keep the rest of the catalogue
                if exc.status in (401, 403, 404):
                    ctx.log(f"huggingface: skipped listing of {repo}: {exc.what}")
                    continue
                raise
        for repo in base_repos:
            url = f"{ctx.base_url}/{quote(repo)}/resolve/main/config.json"
            try:
                ctx.get(url, ext="json")
            except FetchError as exc:
                # gated repos (Meta, Google) answer 401/403 without a token: skip, keep the rest
                if exc.status in (401, 403, 404):
                    ctx.log(f"huggingface: skipped config of {repo}: {exc.what}")
                    continue
                raise
        # Hub resolution of the repos landed runs name (ingest/sources/hub_models.py)
        from ingest.config import landing_dir
        fetch_named_models(ctx, named_repos(landing_dir()), listed={r.lower() for r in gguf_repos},
                           configured={r.lower() for r in base_repos}, fetch_tree=self._fetch_tree)

    def _fetch_tree(self, ctx: FetchContext, repo: str) -> None:
        # Pages are fetched unconditionally: the raw store keeps an unchanged body once, and
        # the next-page link lives in the response headers, which a 304 would not give us.
        url: str | None = f"{ctx.base_url}/api/models/{quote(repo)}/tree/main?recursive=true"
        seen = set()
        while url and url not in seen:
            seen.add(url)
            response = ctx.client.get(url)
            entry, _ = ctx.store.put(ctx.source, response.content, url=url, status=response.status_code,
                                     headers=response.headers, ext="json", parser_version=ctx.parser_version)
            ctx.stored.append(entry)
            url = next_link(response.headers.get("Link"))

    # ---- parse ---------------------------------------------------------------------------
    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        tree = _TREE_URL_RE.search(entry.url)
        config = _CONFIG_URL_RE.search(entry.url)
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PayloadRejected(f"not JSON: {exc}") from None
        if tree:
            return {"files": self.parse_tree(tree.group(1), data)}
        if config:
            return {"configs": self.parse_config(config.group(1), data)}
        info = MODEL_INFO_URL_RE.search(entry.url)
        if info:
            return {"model_infos": parse_model_info(info.group(1), data)}
        raise PayloadRejected(f"URL is neither a tree listing nor a config.json: {entry.url}", "payload_kind")

    @staticmethod
    def parse_tree(repo: str, data) -> pd.DataFrame:
        if not isinstance(data, list):
            raise PayloadRejected("tree listing is not a JSON array", "payload_shape")
        rows = []
        for item in data:
            if not isinstance(item, dict) or item.get("type") != "file":
                continue
            path = str(item.get("path") or "")
            if not is_model_file(path):
                continue
            lfs = item.get("lfs") if isinstance(item.get("lfs"), dict) else {}
            file_name = Path(path).name
            index, count, build = split_parts(file_name)
            rows.append({
                "repo": repo, "path": path, "file_name": file_name, "build_file_name": build,
                # the LFS size is the file's; the top-level size is the same on the Hub
                "size_bytes": lfs.get("size", item.get("size")),
                "quant": parse_quant(file_name), "split_index": index, "split_count": count,
                "lfs_sha256": lfs.get("oid"),
            })
        return pd.DataFrame(rows, columns=list(HuggingFaceFilesSchema.to_schema().columns))

    @staticmethod
    def parse_config(repo: str, data) -> pd.DataFrame:
        if not isinstance(data, dict):
            raise PayloadRejected("config.json is not a JSON object", "payload_shape")
        # multimodal configs (Gemma 3, Mistral 3, Llama 4) keep the language model in text_config
        text = data.get("text_config") if isinstance(data.get("text_config"), dict) else {}
        cfg = {**data, **text}
        heads = cfg.get("num_attention_heads") or cfg.get("n_head")
        hidden = cfg.get("hidden_size") or cfg.get("n_embd")
        head_dim = cfg.get("head_dim")
        derived = False
        if not head_dim and hidden and heads:
            head_dim, derived = int(hidden) // int(heads), True
        row = {
            "repo": repo,
            "model_type": cfg.get("model_type"),
            "num_hidden_layers": cfg.get("num_hidden_layers") or cfg.get("n_layer"),
            "num_attention_heads": heads,
            "num_key_value_heads": cfg.get("num_key_value_heads") or heads,
            "head_dim": head_dim,
            "is_head_dim_derived": derived,
            "hidden_size": hidden,
            "max_position_embeddings": cfg.get("max_position_embeddings") or cfg.get("n_positions"),
            "sliding_window": cfg.get("sliding_window") if isinstance(cfg.get("sliding_window"), int) else None,
        }
        return pd.DataFrame([row], columns=list(HuggingFaceConfigsSchema.to_schema().columns))
