"""LocalScore result pages: the `__NEXT_DATA__` JSON read straight from the bytes (next_data_fast)
gives the same records as BeautifulSoup (next_data_soup), on the recorded pages, on pages of the
real sample database, and on hostile variants, where the fast path either answers the same or
leaves the page to BeautifulSoup."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ingest.source import PayloadRejected
from ingest.sources.localscore import LocalScoreSource, next_data_fast
from tests.helpers.localscore_server import load_sqlite_runs, render_result_page

RECORDED = Path(__file__).resolve().parents[1] / "ingest" / "snapshots" / "localscore"
TAG = b'<script id="__NEXT_DATA__" type="application/json">'


def records(body: bytes, rid: str, fast: bool):
    """The page's test records, or the rejection (reason and check), by one path."""
    try:
        return repr(LocalScoreSource()._result_page_rows(body, rid, fast=fast))  # repr: NaN equals NaN
    except PayloadRejected as exc:
        return ("rejected", exc.check, exc.reason)


def same_either_way(body: bytes, rid: str, fast_answers: bool):
    assert (next_data_fast(body) is not None) == fast_answers
    got = records(body, rid, fast=True)
    assert got == records(body, rid, fast=False)
    return got


def recorded_pages() -> list[tuple[str, bytes]]:
    pages = sorted(RECORDED.glob("result_*.html"))
    assert pages, "the recorded LocalScore result pages are missing"
    return [(re.search(r"result_(\w+)\.html", p.name).group(1), p.read_bytes()) for p in pages]


def test_recorded_pages_give_the_same_records_fast_and_by_beautifulsoup():
    for rid, body in recorded_pages():
        got = same_either_way(body, rid, fast_answers=True)
        assert isinstance(got, str) and "test_name" in got


def test_pages_of_the_sample_database_give_the_same_records(shared_data):
    runs = load_sqlite_runs(shared_data / "localscore" / "localscore_site_sample.sqlite")
    assert runs
    for run in runs:
        body = render_result_page(run, str(run["id"])).encode()
        same_either_way(body, str(run["id"]), fast_answers=True)
    same_either_way(render_result_page(None, "424242").encode(), "424242", fast_answers=True)  # not found


def _data(body: bytes) -> dict:
    start = body.index(TAG) + len(TAG)
    return json.loads(body[start:body.index(b"</script>", start)])


def _with_data(body: bytes, text: str) -> bytes:
    start = body.index(TAG) + len(TAG)
    return body[:start] + text.encode() + body[body.index(b"</script>", start):]


def variants(body: bytes) -> dict[str, tuple[bytes, bool]]:
    """name -> (hostile variant of a page, whether the fast path reads it itself)."""
    data = _data(body)
    noted = json.loads(json.dumps(data))
    noted["props"]["pageProps"]["result"]["note"] = "a </script> and <!-- in a string"
    escaped = json.dumps(noted).replace("</", "<\\/").replace("<!--", "\\u003c!--")  # as Next.js writes
    dup = json.loads(json.dumps(data))
    dup["props"]["pageProps"]["result"]["results"] = dup["props"]["pageProps"]["result"]["results"][:1]
    second = b'<script id="__NEXT_DATA__" type="application/json">' + json.dumps(dup).encode() + b"</script>"
    return {
        "as served": (body, True),
        "attributes reordered": (body.replace(TAG, b'<script type="application/json" id="__NEXT_DATA__">'), False),
        "single quotes": (body.replace(TAG, b"<script id='__NEXT_DATA__' type='application/json'>"), False),
        "whitespace in the tag": (body.replace(TAG, b'<script  id="__NEXT_DATA__"\n type="application/json" >'), False),
        "whitespace around the JSON": (_with_data(body, "\n  " + json.dumps(data, indent=2) + "\n  "), True),
        "upper-case end tag": (body.replace(b"</script></body>", b"</SCRIPT></body>"), True),
        "escaped </script> in a string": (_with_data(body, escaped), True),
        "raw </script> in a string": (_with_data(body, json.dumps(noted)), False),
        "two scripts, first one wins": (body.replace(b"</body>", second + b"</body>"), False),
        "second one first": (body.replace(TAG, second + TAG, 1), False),
        "not JSON": (_with_data(body, '{"props": '), False),
        "no script": (body[:body.index(TAG)] + b"<div>Result not found</div></body></html>", False),
        "no script, no message": (body[:body.index(TAG)] + b"</body></html>", False),
        "not UTF-8": (_with_data(body, json.dumps(data, ensure_ascii=False)).replace(b"RTX", b"RTX\xff"), False),
    }


@pytest.mark.parametrize("name", list(variants(recorded_pages()[0][1])))
def test_hostile_variants_give_the_same_records_or_rejection(name):
    rid, body = recorded_pages()[0]
    variant, fast_answers = variants(body)[name]
    assert variant != body or name == "as served"
    same_either_way(variant, rid, fast_answers)


def test_the_escaped_script_end_is_read_as_data():
    rid, body = recorded_pages()[0]
    variant, _ = variants(body)["escaped </script> in a string"]
    assert next_data_fast(variant)["props"]["pageProps"]["result"]["note"] == "a </script> and <!-- in a string"
