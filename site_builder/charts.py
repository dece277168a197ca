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


def frontier(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points no other beats on both price (lower) and speed (higher), cheapest first."""
    best: list[tuple[float, float]] = []
    for price, speed in sorted(points, key=lambda p: (p[0], -p[1])):
        if not best or speed > best[-1][1]:
            best.append((price, speed))
    return best


def speed_against_price(rows: list[dict], api_price: float | None) -> str | None:
    """Each machine's local USD per million tokens (log x) against its tok/s; the frontier line;
    the API price as a dashed rule."""
    pts = [r for r in rows if r.get("local_usd_per_mtok") and r.get("gen_tps_median")]
    if not pts:
        return None
    prices = [float(r["local_usd_per_mtok"]) for r in pts]
    speeds = [float(r["gen_tps_median"]) for r in pts]
    datasets: dict = {}
    front = _dataset([{"price": _num(p), "speed": _num(s)} for p, s in frontier(list(zip(prices, speeds)))],
                     datasets)
    dots = _dataset([{"machine": r["hardware_name"] or r["hardware_id"], "build": r["quant"], "price": _num(p),
                      "speed": _num(s)} for r, p, s in zip(pts, prices, speeds)], datasets)
    x = _field("price", "quantitative", scale={"type": "log"}, title="USD per million generated tokens (log scale)")
    y = _field("speed", "quantitative", title="tokens per second")
    layers = [
        {"data": front, "mark": {"type": "line", "color": ACCENT, "strokeWidth": 1.5}, "encoding": {"x": x, "y": y}},
        {"data": dots, "mark": {"type": "circle", "color": ACCENT, "opacity": 0.85, "size": 70},
         "encoding": {"tooltip": [_field("machine", "nominal"), _field("build", "nominal"),
                                  _field("price", "quantitative"), _field("speed", "quantitative")],
                      "x": x, "y": y}},
    ]
    if api_price:
        api = _dataset([{"price": _num(float(api_price)), "label": f"API ${api_price:.2f}"}], datasets)
        layers.append({"data": api, "mark": {"type": "rule", "color": "#dc2626", "strokeDash": [6, 4]},
                       "encoding": {"x": _field("price", "quantitative")}})
        layers.append({"data": api, "mark": {"type": "text", "align": "left", "baseline": "bottom", "color": "#dc2626",
                                             "dx": 4, "dy": -4},
                       "encoding": {"text": _field("label", "nominal"), "x": _field("price", "quantitative"),
                                    "y": {"value": 0}}})
    return _svg({"layer": layers, "height": 260, "width": 560}, datasets)


def interval_chart(rows: list[dict], label_key: str = "label") -> str | None:
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


def bar_chart(labels: list[str], values: list[float], title: str, estimate: list[bool] | None = None) -> str | None:
    if not labels:
        return None
    kinds = ["estimate" if e else "measured" for e in (estimate or [False] * len(labels))]
    rows = [{"label": label, "value": _num(float(v)), "kind": k}
            for label, v, k in zip(labels, values, kinds, strict=True)]
    mixed = len(set(kinds)) > 1  # a legend only when some bars are estimates and some are not
    datasets: dict = {}
    data = _dataset(rows, datasets)
    encoding = {
        "color": _field("kind", "nominal", legend={"orient": "bottom", "title": None} if mixed else None,
                        scale={"domain": ["measured", "estimate"], "range": [ACCENT, "#cbd5e1"]}),
        "x": _field("value", "quantitative", title=title),
        "y": _field("label", "nominal", axis={"labelLimit": 300}, sort=labels, title=None),
    }
    return _svg({"data": data, "mark": {"type": "bar"}, "encoding": encoding, "height": max(40, 22 * len(rows)),
                 "width": 420}, datasets)
