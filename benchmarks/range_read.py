"""Bytes a range reader fetches for one model's rows of a release (issue 55, docs/benchmarks.md).

The release folder is served on loopback by the site server (single byte ranges answered with 206,
as static hosts do) and read as a site's backend would: pyarrow through fsspec's HTTP filesystem,
with a row filter on model_id and 64 KiB blocks kept once fetched, so only the footer and the row
groups whose statistics can hold the model are fetched. The largest file of the release is measured for its median model and its
largest one; the figure is the bytes the server sent against the file's size.

    python -m benchmarks.range_read --exports $BENCHWH_HOME/exports
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

import fsspec
import pyarrow.parquet as pq

from site_builder.serve import make_server

READ_BLOCK = 64 * 1024  # fsspec's block: one request per block touched, not 5 MB ones
# what a speed table on a model page shows of a speed fact (where the table has them)
PAGE_COLUMNS = ("model_id", "hardware_id", "build_id", "config_id", "engine", "gen_tps", "prompt_tps", "ttft_ms",
                "gen_tps_median", "prompt_tps_median")


def read_one_model(url: str, model_id: str, columns: list[str] | None = None) -> int:
    fs = fsspec.filesystem("http", block_size=READ_BLOCK)
    # blockcache keeps the blocks it fetched: no byte is fetched twice when pyarrow seeks back
    with fs.open(url, "rb", block_size=READ_BLOCK, cache_type="blockcache") as fh:
        return pq.read_table(fh, columns=columns, filters=[("model_id", "=", model_id)]).num_rows


def measure(exports: Path) -> dict:
    latest = json.loads((exports / "latest.json").read_text())
    folder = exports / latest["path"]
    package = json.loads((folder / "datapackage.json").read_text())
    candidates = [r for r in package["resources"] if "model_id" in {f["name"] for f in r["schema"]["fields"]}]
    largest = max(candidates, key=lambda r: r["bytes"])
    path = folder / largest["path"]
    counts = pq.read_table(path, columns=["model_id"]).column("model_id").value_counts().to_pylist()
    counts = sorted((c for c in counts if c["values"] is not None), key=lambda c: (c["counts"], c["values"]))
    models = {"median": counts[len(counts) // 2], "largest": counts[-1]}
    server = make_server(folder, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{largest['path']}"
        out = {"table": largest["title"], "file_bytes": largest["bytes"], "rows": largest["rows"],
               "models": len(counts), "row_group_rows": largest.get("row_group_rows")}
        names = [f["name"] for f in largest["schema"]["fields"]]
        page_columns = [c for c in PAGE_COLUMNS if c in names]
        out["page_columns"] = page_columns
        for which, chosen in models.items():
            entry = {"model_id": chosen["values"], "rows": chosen["counts"],
                     "share_of_rows": round(chosen["counts"] / largest["rows"], 4)}
            for label, columns in (("all_columns", None), ("page_columns", page_columns)):
                server.bytes_sent.clear()
                rows = read_one_model(url, chosen["values"], columns)
                assert rows == chosen["counts"], (rows, chosen)
                sent = server.bytes_sent[f"/{largest['path']}"]
                entry[label] = {"bytes_read": sent, "share_of_file": round(sent / largest["bytes"], 4)}
            out[which] = entry
    finally:
        server.shutdown()
        server.server_close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exports", type=Path, required=True, help="a home's exports folder (latest.json inside)")
    args = ap.parse_args(argv)
    if not (args.exports / "latest.json").is_file():
        print(f"benchmarks.range_read: no release in {args.exports} (no latest.json: publish first)", file=sys.stderr)
        return 2
    detail = measure(args.exports)
    print(f"{detail['table']}: {detail['file_bytes']:,} bytes, {detail['rows']:,} rows, {detail['models']} models")
    for which in ("median", "largest"):
        d = detail[which]
        print(f"  {which} model {d['model_id']} ({d['rows']:,} rows, {100 * d['share_of_rows']:.1f}% of the rows):")
        for label in ("all_columns", "page_columns"):
            print(f"    {label.replace('_', ' ')}: {d[label]['bytes_read']:,} bytes read "
                  f"= {100 * d[label]['share_of_file']:.2f}% of the file")
    print(json.dumps({"rows": detail["largest"]["rows"], "detail": detail}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
