"""Coercion of parsed values before pandera validates them: one rule per case, for every source.

A parser hands each value through one of these. They never raise: a value that is not what the
column wants is returned unchanged, so pandera quarantines the row with the value shown.

  input             to_int        to_float      to_text      to_bool
  None, NaN         None          None          None         None
  "" or "  "        None          None          None         None
  True / False      None          None          "True"...    True / False
  12, 12.0          12            12.0          "12"...      unchanged (not 0/1)
  " 12 "            12            12.0          "12"         unchanged
  "12.0", "1e3"     12, 1000      12.0, 1000.0  as text      unchanged
  12.5, "12.5"      unchanged     12.5          as text      unchanged
  "abc"             unchanged     unchanged     "abc"        unchanged
  2**70             unchanged (beyond int64: quarantined)

Why these: a boolean in a numeric field is not a count (JSON `true` where a number belongs is a
broken record, and reading it as 1 would invent a value), so it counts as missing. Surrounding
whitespace never carries meaning in the sources' fields, and an empty text is no value. An
integral number written as "12.0" or "1e3" is that integer; 12.5 in an integer column is
refused rather than rounded. NaN is missing. `to_bool` reads true/false, 1/0 and "true"/"false"
(any case), nothing else.
"""
from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def is_missing(value: Any) -> bool:
    """None, a float NaN, or a text that is empty after stripping."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def to_int(value: Any) -> Any:
    """An integer, None when missing (booleans included), else the value unchanged."""
    if is_missing(value) or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value  # beyond int64 too: pandera quarantines it with the value shown
    if isinstance(value, float):
        return int(value) if value.is_integer() and INT64_MIN <= value <= INT64_MAX else value
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return value
        if number.is_finite() and number == number.to_integral_value():
            integer = int(number)
            if INT64_MIN <= integer <= INT64_MAX:
                return integer
        return value
    return value


def to_float(value: Any) -> Any:
    """A float, None when missing (booleans and NaN included), else the value unchanged."""
    if is_missing(value) or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return value
        return None if math.isnan(number) else number
    return value


def to_text(value: Any) -> str | None:
    """Text stripped of surrounding whitespace; None when missing or empty."""
    if is_missing(value):
        return None
    return str(value).strip() or None


def to_bool(value: Any) -> Any:
    """True/False from a boolean, 1/0 or "true"/"false" (any case); None when missing; else unchanged."""
    if is_missing(value):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value
