"""ingest/coerce.py: the one rule per case every source's parser uses (docstring table)."""
import math

import pandas as pd
import pandera.pandas as pa
import pytest
from pandera.typing import Series

from ingest.coerce import to_bool, to_float, to_int, to_text
from ingest.landing import LandingSchema, validate_frame

NAN = float("nan")


@pytest.mark.parametrize("value, expected", [
    (None, None), (NAN, None), ("", None), ("   ", None),
    (True, None), (False, None),
    (12, 12), (12.0, 12), (" 12 ", 12), ("12", 12), ("12.0", 12), ("1e3", 1000), ("-3", -3),
    (2**63 - 1, 2**63 - 1), (str(2**63 - 1), 2**63 - 1),
])
def test_to_int(value, expected):
    result = to_int(value)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize("value", [12.5, "12.5", "abc", "1e999", float("inf"), 2**70, float(2**70), str(2**70), [1]])
def test_to_int_leaves_what_is_no_int64_for_pandera(value):
    assert to_int(value) is value


@pytest.mark.parametrize("value, expected", [
    (None, None), (NAN, None), ("", None), (" ", None), ("NaN", None), (True, None), (False, None),
    (12, 12.0), (" 12 ", 12.0), ("1e3", 1000.0), ("12.0", 12.0), ("12.5", 12.5), (12.5, 12.5),
    (2**70, float(2**70)),
])
def test_to_float(value, expected):
    result = to_float(value)
    assert result == expected and (result is None or type(result) is float)


def test_to_float_leaves_text_and_keeps_infinity():
    assert to_float("abc") == "abc"
    assert math.isinf(to_float("1e999"))  # pandera's range checks refuse it, with the value shown


@pytest.mark.parametrize("value, expected", [
    (None, None), (NAN, None), ("", None), ("  ", None), (" 12 ", "12"), ("a b", "a b"), (12, "12"),
    (True, "True"), ("1e3", "1e3"),
])
def test_to_text(value, expected):
    assert to_text(value) == expected


@pytest.mark.parametrize("value, expected", [
    (None, None), (NAN, None), ("", None), (True, True), (False, False), (1, True), (0, False),
    (" TRUE ", True), ("false", False), ("yes", "yes"), (2, 2), (12.5, 12.5),
])
def test_to_bool(value, expected):
    assert to_bool(value) == expected and type(to_bool(value)) is type(expected)


class CoercedSchema(LandingSchema):
    count: Series[pd.Int64Dtype] = pa.Field(nullable=True)


def test_what_to_int_leaves_is_quarantined_and_the_rest_lands():
    values = [True, " 12 ", "1e3", "12.0", "12.5", 2**70, None, NAN, ""]
    valid, rows = validate_frame(pd.DataFrame({"count": [to_int(v) for v in values]}), CoercedSchema)
    assert valid.loc[[1, 2, 3], "count"].tolist() == [12, 1000, 12]
    assert valid.loc[[0, 6, 7, 8], "count"].isna().all()  # a boolean is no count: missing
    assert sorted({r["record_index"] for r in rows}) == [4, 5]  # 12.5 and the overflow
    assert len(valid) == len(values) - 2


def test_landing_schema_sets_coerce_and_strict_once():
    schema = CoercedSchema.to_schema()
    assert schema.coerce is True and schema.strict is False
