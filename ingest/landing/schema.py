"""The base of every landing schema (a pandera DataFrameModel per entity, named
`<Source><Entity>Schema`): parsed values are coerced to the declared types, and columns the
model does not declare are tolerated (an upstream that adds a field does not fail landing)."""
from __future__ import annotations

import pandera.pandas as pa


class LandingSchema(pa.DataFrameModel):
    class Config:
        coerce = True
        strict = False
