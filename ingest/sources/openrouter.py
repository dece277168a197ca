"""OpenRouter `GET /models`: the API price list, snapshot daily (DESIGN §4).

One payload is the whole catalogue at one time; price history is derived later in dbt from the
sequence of snapshots (marts.fct_api_prices), never kept as state here.

Prices arrive as decimal strings in USD per token. We convert them with Decimal to USD per
million tokens so `"0.000000015"` becomes exactly 0.015, not 0.015000000000000001.

What goes where:
- a payload that is not JSON or has no `data` list        -> PayloadRejected (quarantined whole)
- a record without `id` or `pricing`                       -> PayloadRejected with the check
  `required_field_missing`, and validate_payloads() then fails the source. We use the ledgered
  rejection rather than raising SourceFailed from parse(): parse() is pure and an exception from
  it would leave the payload pending forever, so every later refresh would fail on the same bytes;
  this way the bad payload is quarantined and recorded once, this run fails (nothing published),
  and the next good payload lands normally.
- a prompt or completion price of exactly "-1" (OpenRouter's documented marker: the router sets
  the price per request)                                   -> landed with has_fixed_price false and
  null prices: a known "no fixed price", counted, kept out of marts.fct_api_prices.
- any other negative, non-numeric, NaN or absurd price (over $1,000 per million tokens)
                                                           -> that row is quarantined by pandera.
- unknown new fields (in the record or in `pricing`)       -> tolerated; the pricing object is
  kept verbatim in `pricing_json`.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.coerce import to_int, to_text
from ingest.landing.schema import LandingSchema
from ingest.raw_store import RawEntry
from ingest.source import Entity, FetchContext, PayloadRejected, Source, SourceFailed

# Above this a price is a data error, not a price (the dearest real models are ~ $150-600/Mtok).
MAX_USD_PER_MTOK = 1000.0
MAX_USD_PER_REQUEST = 1000.0
REQUIRED_FIELD_CHECK = "required_field_missing"
# The ledger keeps only a rejection's reason, so the reason carries the marker validate_payloads reads.
REQUIRED_FIELD_REASON = "required field missing: "
_MILLION = Decimal(1_000_000)


class OpenRouterModelsSchema(LandingSchema):
    """One row per model listed in one `/models` snapshot."""

    openrouter_id: Series[str] = pa.Field(
        description="OpenRouter model id, e.g. `meta-llama/llama-3.2-1b-instruct` or `...:free`.")
    canonical_slug: Series[str] = pa.Field(
        nullable=True, description="OpenRouter's dated slug of the underlying model version.")
    name: Series[str] = pa.Field(nullable=True, description="Display name, e.g. `Meta: Llama 3.2 1B Instruct`.")
    hugging_face_id: Series[str] = pa.Field(
        nullable=True, description="Hugging Face repo of the weights when OpenRouter names one (empty -> null).")
    created: Series[pd.Timestamp] = pa.Field(
        nullable=True, description="When OpenRouter added the model (naive UTC, from epoch seconds).")
    context_length: Series[pd.Int64Dtype] = pa.Field(
        nullable=True, ge=0, description="Context window in tokens.")
    max_completion_tokens: Series[pd.Int64Dtype] = pa.Field(
        nullable=True, ge=0, description="Top provider's cap on generated tokens, when stated.")
    modality: Series[str] = pa.Field(nullable=True, description="e.g. `text->text`, `text+image->text`.")
    tokenizer: Series[str] = pa.Field(nullable=True, description="Tokenizer family named by OpenRouter.")
    is_free_variant: Series[bool] = pa.Field(description="The id ends in `:free`.")
    has_fixed_price: Series[bool] = pa.Field(
        description='False when OpenRouter prices the model per request ("-1": router entries); its prices are then null.')
    prompt_usd_per_mtok: Series[float] = pa.Field(
        nullable=True, ge=0, le=MAX_USD_PER_MTOK,
        description="Input price, USD per million tokens (missing key = 0; null without a fixed price).")
    completion_usd_per_mtok: Series[float] = pa.Field(
        nullable=True, ge=0, le=MAX_USD_PER_MTOK,
        description="Output price, USD per million tokens (missing key = 0; null without a fixed price).")
    request_usd: Series[float] = pa.Field(
        nullable=True, ge=0, le=MAX_USD_PER_REQUEST,
        description="Fixed price per request, USD (missing key = 0; null without a fixed price).")
    input_cache_read_usd_per_mtok: Series[float] = pa.Field(
        nullable=True, ge=0, le=MAX_USD_PER_MTOK,
        description="Cached-input read price, USD per million tokens; null when not offered.")
    input_cache_write_usd_per_mtok: Series[float] = pa.Field(
        nullable=True, ge=0, le=MAX_USD_PER_MTOK,
        description="Cached-input write price, USD per million tokens; null when not offered.")
    pricing_json: Series[str] = pa.Field(
        description="The record's `pricing` object verbatim (sorted keys): keeps price kinds we do not model.")

    class Config:
        # an id listed twice in one snapshot is ambiguous: both rows go to quarantine
        unique = ["openrouter_id"]

    @pa.dataframe_check(description="prices are null only for a model without a fixed price ('-1')")
    def prices_present_when_fixed(cls, df: pd.DataFrame) -> pd.Series:
        priced = df[["prompt_usd_per_mtok", "completion_usd_per_mtok", "request_usd"]].notna().all(axis=1)
        return priced | ~df["has_fixed_price"].astype(bool)


def _price(pricing: dict, key: str, per: Decimal, missing: Any) -> Any:
    """USD per token (decimal string) -> float per `per` tokens.

    Unparseable text is returned as is, so pandera fails that row on coercion and the quarantine
    shows the text received; NaN/inf come back as NaN (fails not-null).
    """
    if key not in pricing or pricing[key] is None:
        return missing
    raw = pricing[key]
    if isinstance(raw, bool):
        return str(raw)
    try:
        value = Decimal(str(raw).strip())
    except InvalidOperation:
        return str(raw)
    if not value.is_finite():
        return float("nan")
    return float(value * per)


def _created(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=timezone.utc).replace(tzinfo=None)
    return value


class OpenRouterSource(Source):
    name = "openrouter"
    kind = "snapshot"
    license = "OpenRouter API terms of service (public /models listing, no key)"
    attribution = "Model prices from OpenRouter (https://openrouter.ai/api/v1/models)"
    freshness_warn_hours = 36
    freshness_error_hours = 24 * 7
    parser_version = "1"
    entities = (
        Entity("models", OpenRouterModelsSchema,
               "One row per model of one OpenRouter /models snapshot, prices in USD per million tokens."),
    )

    def fetch(self, ctx: FetchContext) -> None:
        entry, body = ctx.get(f"{ctx.base_url}/models", ext="json")
        if body is None:
            ctx.log(f"  openrouter: /models not modified since {entry.fetched_at}")

    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PayloadRejected(f"not JSON: {exc}") from None
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            raise PayloadRejected("no `data` list in the /models payload", check="payload_shape")

        rows = []
        for i, rec in enumerate(data):
            if not isinstance(rec, dict):
                raise PayloadRejected(f"{REQUIRED_FIELD_REASON}record {i} is not an object",
                                      check=REQUIRED_FIELD_CHECK)
            for key in ("id", "pricing"):
                if key not in rec or rec[key] is None:
                    raise PayloadRejected(
                        f"{REQUIRED_FIELD_REASON}record {i} (id {rec.get('id')!r}) has no `{key}`",
                        check=REQUIRED_FIELD_CHECK)
            pricing = rec["pricing"]
            if not isinstance(pricing, dict):
                raise PayloadRejected(f"{REQUIRED_FIELD_REASON}record {i} (id {rec['id']!r}) has a `pricing` "
                                      "that is not an object",
                                      check=REQUIRED_FIELD_CHECK)
            arch = rec.get("architecture") if isinstance(rec.get("architecture"), dict) else {}
            top = rec.get("top_provider") if isinstance(rec.get("top_provider"), dict) else {}
            ident = str(rec["id"])
            # "-1" is OpenRouter's documented "price set by the router": no fixed price, not an error
            fixed = not any(str(pricing.get(k)).strip() == "-1" for k in ("prompt", "completion"))
            rows.append({
                "openrouter_id": ident,
                "canonical_slug": to_text(rec.get("canonical_slug")),
                "name": to_text(rec.get("name")),
                "hugging_face_id": to_text(rec.get("hugging_face_id")),
                "created": _created(rec.get("created")),
                "context_length": to_int(rec.get("context_length")),
                "max_completion_tokens": to_int(top.get("max_completion_tokens")),
                "modality": to_text(arch.get("modality")),
                "tokenizer": to_text(arch.get("tokenizer")),
                "is_free_variant": ident.endswith(":free"),
                # zero-valued keys may be omitted upstream: missing means 0
                "has_fixed_price": fixed,
                "prompt_usd_per_mtok": _price(pricing, "prompt", _MILLION, 0.0) if fixed else None,
                "completion_usd_per_mtok": _price(pricing, "completion", _MILLION, 0.0) if fixed else None,
                "request_usd": _price(pricing, "request", Decimal(1), 0.0) if fixed else None,
                # optional features: missing means not offered
                "input_cache_read_usd_per_mtok": _price(pricing, "input_cache_read", _MILLION, None),
                "input_cache_write_usd_per_mtok": _price(pricing, "input_cache_write", _MILLION, None),
                "pricing_json": json.dumps(pricing, sort_keys=True),
            })
        columns = list(OpenRouterModelsSchema.to_schema().columns)
        frame = pd.DataFrame(rows, columns=columns)
        # object columns keep text that is not a number, so the failing row shows what came in
        for col in ("context_length", "max_completion_tokens"):
            frame[col] = frame[col].astype(object)
        return {"models": frame}

    def validate_payloads(self, results) -> None:
        for outcome in results:
            if outcome.status == "rejected" and outcome.reason and outcome.reason.startswith(REQUIRED_FIELD_REASON):
                raise SourceFailed(
                    f"openrouter: payload {outcome.sha256[:12]} from {outcome.url}: {outcome.reason}")
