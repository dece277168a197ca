"""Charts drawn at build time: Vega-Lite specs written as plain dicts, rendered to inline SVG by
vl-convert (offline, no JavaScript in the page).

The specs are the ones altair 6.3 wrote for these charts (same keys, same order, same dataset names),
so the SVG is the same; written directly, as altair's validation, deep copies and hashing of the data
cost about a third of a site build."""
from __future__ import annotations

import hashlib
import json
import math

import vl_convert as vlc

from site_builder.fmt import build_label, usd

# the font vl-convert measures labels with (it bundles Liberation Sans) is the one the browser draws
# them in (Debian's chromium pulls fonts-liberation), so long labels are not clipped
FONT = "Liberation Sans, Arial, Helvetica, sans-serif"
ACCENT = "#2563eb"
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300, "stroke": None}, "background": "white",
          "font": FONT}


def _num(value: float) -> float | None:
    """NaN and infinities are not JSON: null, as altair wrote them."""
    return value if math.isfinite(value) else None


def _dataset(values: list[dict], datasets: dict) -> dict:
    """Name inline data by its content (altair's naming) and keep it in the top-level datasets."""
    name = "data-" + hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:32]
    datasets[name] = values
    return {"name": name}


def _svg(body: dict, datasets: dict) -> str:
    spec = {"config": CONFIG, **body, "$schema": SCHEMA, "datasets": datasets}
    # a dict, not a JSON string: vl-convert parses strings with serde_json, whose float parsing
    # can land one ulp off and move a mark by 1e-13 px
    svg = vlc.vegalite_to_svg(spec)
    # vl-convert writes a fixed-size SVG: let it shrink with the page
    return svg.replace("<svg ", '<svg role="img" style="max-width:100%;height:auto" ', 1)


def _field(name: str, kind: str, **extra) -> dict:
    """An encoding channel, its keys sorted as altair wrote them."""
    return dict(sorted({"field": name, "type": kind, **extra}.items()))


GIB = 2**30


def speed_against_price(rows: list[dict], api_price: float | None) -> str | None:
    """Each machine's local USD per million tokens (log x) against its tok/s, each dot labelled
    (point_label); the line through the rows the table marks is_frontier; the API price dashed."""
    pts = [r for r in rows if r["local_usd_per_mtok"] and r["gen_tps_median"]]
    if not pts:
        return None
    datasets: dict = {}
    front = _dataset([{"price": _num(float(r["local_usd_per_mtok"])), "speed": _num(float(r["gen_tps_median"]))}
                      for r in pts if r["is_frontier"]], datasets)
    dots = _dataset([{"machine": r["point_label"], "price": _num(float(r["local_usd_per_mtok"])),
                      "speed": _num(float(r["gen_tps_median"]))} for r in pts], datasets)
    x = _field("price", "quantitative", scale={"type": "log"}, title="USD per million generated tokens (log scale)")
    y = _field("speed", "quantitative", title="tokens per second")
    layers = [
        {"data": front, "mark": {"type": "line", "color": ACCENT, "strokeWidth": 1.5}, "encoding": {"x": x, "y": y}},
        {"data": dots, "mark": {"type": "circle", "color": ACCENT, "opacity": 0.85, "size": 70},
         "encoding": {"tooltip": [_field("machine", "nominal"), _field("price", "quantitative"),
                                  _field("speed", "quantitative")], "x": x, "y": y}},
        {"data": dots, "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 7, "fontSize": 10,
                                "color": "#334155"},
         "encoding": {"text": _field("machine", "nominal"), "x": x, "y": y}},
    ]
    if api_price:
        api = _dataset([{"price": _num(float(api_price)), "label": f"OpenRouter {usd(api_price)}"}], datasets)
        layers.append({"data": api, "mark": {"type": "rule", "color": "#dc2626", "strokeDash": [6, 4]},
                       "encoding": {"x": _field("price", "quantitative")}})
        layers.append({"data": api, "mark": {"type": "text", "align": "left", "baseline": "bottom", "color": "#dc2626",
                                             "dx": 4, "dy": -4},
                       "encoding": {"text": _field("label", "nominal"), "x": _field("price", "quantitative"),
                                    "y": {"value": 0}}})
    return _svg({"layer": layers, "height": 300, "width": 640}, datasets)


def fits_on_bars(fits: list[dict], builds: list[dict]) -> str | None:
    """What it fits on: a bar per kind of machine at its memory, and a tick (a rule across the bars)
    at every build's need (site.model_builds.fits_needed_bytes), in GiB."""
    if not fits:
        return None
    datasets: dict = {}
    kinds = [r["kind_label"] for r in fits]
    bars = _dataset([{"kind": r["kind_label"], "bytes": r["memory_bytes"], "held": r["held_state"]} for r in fits],
                    datasets)
    ticks = _dataset([{"build": build_label(b["quant"], b["quantizer"]), "bytes": b["fits_needed_bytes"]}
                      for b in builds if b["fits_needed_bytes"]], datasets)
    gib = [{"calculate": f"datum.bytes / {GIB}", "as": "gib"}]
    x = _field("gib", "quantitative", title="memory, GiB (ticks: each build's size plus a fifth for the prompt)")
    layers = [
        {"data": bars, "transform": gib, "mark": {"type": "bar"},
         "encoding": {"x": x, "y": _field("kind", "nominal", axis={"labelLimit": 320}, sort=kinds, title=None),
                      "color": _field("held", "nominal", legend={"orient": "bottom", "title": None},
                                      scale={"domain": ["holds every build", "holds some builds", "holds none"],
                                             "range": [ACCENT, "#93c5fd", "#e2e8f0"]})}},
        {"data": ticks, "transform": gib, "mark": {"type": "rule", "color": "#0f172a", "strokeWidth": 1.5,
                                                    "opacity": 0.7},
         "encoding": {"x": x, "tooltip": [_field("build", "nominal"), _field("gib", "quantitative", format=".2f")]}},
    ]
    return _svg({"layer": layers, "height": max(60, 22 * len(fits)), "width": 460}, datasets)


def carbon_bars(lowest: list[dict]) -> str | None:
    """Carbon per million tokens: a bar per machine (its lowest build), fewer grams better."""
    pts = [r for r in lowest if r["gco2_per_mtok"] is not None]
    if not pts:
        return None
    datasets: dict = {}
    labels = [r["bar_label"] for r in pts]
    data = _dataset([{"machine": label, "grams": _num(float(r["gco2_per_mtok"])), "method": r["method"]}
                     for label, r in zip(labels, pts)], datasets)
    encoding = {
        "color": _field("method", "nominal", legend={"orient": "bottom", "title": None},
                        scale={"domain": ["sensor", "modelled", "mixed"], "range": [ACCENT, "#cbd5e1", "#93c5fd"]}),
        "x": _field("grams", "quantitative", title="gCO₂ per million tokens"),
        "y": _field("machine", "nominal", axis={"labelLimit": 320}, sort=labels, title=None),
    }
    return _svg({"data": data, "mark": {"type": "bar"}, "encoding": encoding, "height": max(40, 22 * len(pts)),
                 "width": 420}, datasets)


def interval_chart(rows: list[dict], label_key: str = "entry_label") -> str | None:
    """Median tok/s with its interval, one line per entry (leaderboards, hardware pages)."""
    pts = [r for r in rows if r.get("gen_tps_median") is not None]
    if not pts:
        return None
    values = [{"entry": r[label_key], "median": _num(float(r["gen_tps_median"])),
               "low": _num(float(r.get("gen_tps_ci_low") or r["gen_tps_median"])),
               "high": _num(float(r.get("gen_tps_ci_high") or r["gen_tps_median"]))} for r in pts]
    y = _field("entry", "nominal", axis={"labelLimit": 300}, sort=[v["entry"] for v in values], title=None)
    bars = {"mark": {"type": "rule", "color": "#93c5fd", "strokeWidth": 5},
            "encoding": {"x": _field("low", "quantitative", title="tokens per second"), "x2": {"field": "high"},
                         "y": y}}
    dots = {"mark": {"type": "tick", "color": ACCENT, "size": 14, "thickness": 2},
            "encoding": {"tooltip": [_field("entry", "nominal"), _field("median", "quantitative")],
                         "x": _field("median", "quantitative"), "y": y}}
    datasets: dict = {}
    data = _dataset(values, datasets)
    return _svg({"layer": [bars, dots], "data": data, "height": max(40, 22 * len(values)), "width": 420}, datasets)


def bar_chart(rows: list[dict], label_key: str, value_key: str, title: str,
              estimate_key: str | None = None) -> str | None:
    """A bar per row with a value; grey where the row's `estimate_key` is true."""
    pts = [r for r in rows if r[value_key] is not None]
    if not pts:
        return None
    labels = [r[label_key] for r in pts]
    kinds = ["estimate" if estimate_key and r[estimate_key] else "measured" for r in pts]
    values = [{"label": label, "value": _num(float(r[value_key])), "kind": k} for label, r, k in zip(labels, pts, kinds)]
    mixed = len(set(kinds)) > 1  # a legend only when some bars are estimates and some are not
    datasets: dict = {}
    data = _dataset(values, datasets)
    encoding = {
        "color": _field("kind", "nominal", legend={"orient": "bottom", "title": None} if mixed else None,
                        scale={"domain": ["measured", "estimate"], "range": [ACCENT, "#cbd5e1"]}),
        "x": _field("value", "quantitative", title=title),
        "y": _field("label", "nominal", axis={"labelLimit": 300}, sort=labels, title=None),
    }
    return _svg({"data": data, "mark": {"type": "bar"}, "encoding": encoding, "height": max(40, 22 * len(values)),
                 "width": 420}, datasets)
