"""Grid carbon intensity: Ember's yearly electricity data, as exported by Our World in Data.

The payload is OWID's grapher CSV `Entity,Code,Year,<value>`; the value column has been named
`Carbon intensity of electricity - gCO2/kWh` (grapher export) and `carbon_intensity` (later
exports / re-publications), both accepted. One payload is the whole table (snapshot source).

Decisions:
- `iso3` holds only real ISO 3166-1 alpha-3 codes. OWID's own codes (`OWID_WRL` for World,
  `OWID_KOS` for Kosovo) and the empty code of regional aggregates become null; the raw code is
  kept in `area_code`. World is addressed by `area = 'World'` (with `is_aggregate` true).
- A payload without a `World` row fails the source (carbon estimates fall back to World), as a
  dataframe-level pandera check: landing treats it as schema-level, so the payload is recorded
  as failed and nothing is published.
- A CSV whose header lacks the entity, year or value column fails the same way (the frame then
  misses a required column). A body that is not CSV text at all is rejected (PayloadRejected).
- Row-level problems (empty or negative value, year out of range) quarantine that row only.
"""
from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.coerce import to_float
from ingest.landing.schema import LandingSchema
from ingest.raw_store import RawEntry
from ingest.source import Entity, FetchContext, PayloadRejected, Source

VALUE_COLUMNS = ("carbon intensity of electricity - gco2/kwh", "carbon_intensity")
_ISO3 = re.compile(r"^[A-Z]{3}$")
# The dirtiest real grids are ~1,300 gCO2/kWh (oil and coal islands); 2,000 is a typo, not a grid.
MAX_GCO2_PER_KWH = 2000.0


class GridIntensitySchema(LandingSchema):
    """One row per area and year of one carbon-intensity export."""

    area: Series[str] = pa.Field(str_length={"min_value": 1},
                                 description="OWID entity name: a country, `World`, or an aggregate such as `EU (Ember)`.")
    area_code: Series[str] = pa.Field(nullable=True,
                                      description="The export's Code as received (ISO alpha-3, `OWID_*`, or null).")
    iso3: Series[str] = pa.Field(nullable=True, str_matches=r"^[A-Z]{3}$",
                                 description="ISO 3166-1 alpha-3; null for World, aggregates and OWID_* codes.")
    is_aggregate: Series[bool] = pa.Field(description="World or a regional/income group, not one country.")
    year: Series[int] = pa.Field(ge=1985, le=2100, description="Calendar year of the yearly figure.")
    gco2_per_kwh: Series[float] = pa.Field(ge=0, le=MAX_GCO2_PER_KWH,
                                           description="Life-cycle grams CO2-equivalent per kWh generated (Ember).")

    class Config:
        unique = ["area", "year"]

    @pa.dataframe_check(error="the export has no `World` row (required as the carbon fallback)")
    def has_world_row(cls, df: pd.DataFrame) -> bool:
        return bool((df["area"] == "World").any())


class GridSource(Source):
    name = "grid"
    kind = "snapshot"
    license = "CC BY 4.0"
    attribution = ("Ember (2025), Yearly Electricity Data, processed by Our World in Data: "
                   "carbon intensity of electricity (gCO2/kWh)")
    # The data vintage this parser and the bundled recording were written against; shown in the
    # export manifest. A new Ember release is a deliberate bump (check the World figures).
    vintage = "ember-yearly-2025-12 via OWID grapher carbon-intensity-electricity"
    freshness_warn_hours = 24 * 45  # yearly data, re-released a few times a year
    freshness_error_hours = 24 * 400
    parser_version = "1"
    entities = (
        Entity("intensity", GridIntensitySchema,
               "Carbon intensity of electricity per area and year (Ember via OWID), gCO2/kWh."),
    )

    def fetch(self, ctx: FetchContext) -> None:
        # the base URL is the CSV itself (BENCHWH_GRID_URL)
        entry, body = ctx.get(ctx.base_url, ext="csv")
        if body is None:
            ctx.log(f"  grid: export not modified since {entry.fetched_at}")

    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        try:
            text = body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise PayloadRejected(f"not UTF-8 text: {exc}") from None
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if not header or len(header) < 2:
            raise PayloadRejected("empty payload or no CSV header", check="payload_shape")
        names = [h.strip().lower() for h in header]
        col = {"area": _find(names, ("entity",)), "code": _find(names, ("code",)),
               "year": _find(names, ("year",)), "value": _find(names, VALUE_COLUMNS)}

        rows = []
        for rec in reader:
            if not any(cell.strip() for cell in rec):
                continue
            get = lambda key: rec[col[key]].strip() if col[key] is not None and col[key] < len(rec) else None  # noqa: E731
            area = get("area")
            code = get("code") or None
            iso3 = code if code and _ISO3.fullmatch(code) else None
            rows.append({
                "area": area,
                "area_code": code,
                "iso3": iso3,
                "is_aggregate": iso3 is None and code != "OWID_KOS",
                "year": get("year"),
                "gco2_per_kwh": to_float(get("value")),
            })
        columns = list(GridIntensitySchema.to_schema().columns)
        frame = pd.DataFrame(rows, columns=columns)
        # a required column the header lacks stays absent: pandera fails the payload (schema-level)
        missing = {"area": "area", "year": "year", "value": "gco2_per_kwh"}
        return {"intensity": frame.drop(columns=[c for k, c in missing.items() if col[k] is None])}


def _find(names: list[str], candidates: tuple[str, ...]) -> int | None:
    for cand in candidates:
        if cand in names:
            return names.index(cand)
    return None
