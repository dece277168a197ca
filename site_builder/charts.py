"""Charts drawn at build time: Vega-Lite specs from altair, rendered to inline SVG by vl-convert
(offline, no JavaScript in the page)."""
from __future__ import annotations

import altair as alt
import pandas as pd
import vl_convert as vlc

# the font vl-convert measures labels with (it bundles Liberation Sans) is the one the browser draws
# them in (Debian's chromium pulls fonts-liberation), so long labels are not clipped
FONT = "Liberation Sans, Arial, Helvetica, sans-serif"
ACCENT = "#2563eb"


def _svg(chart: alt.TopLevelMixin) -> str:
    chart = chart.configure(font=FONT, background="white").configure_view(stroke=None)
    svg = vlc.vegalite_to_svg(chart.to_dict(validate=False))  # specs are ours; vl-convert reports errors
    # vl-convert writes a fixed-size SVG: let it shrink with the page
    return svg.replace("<svg ", '<svg role="img" style="max-width:100%;height:auto" ', 1)


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
    df = pd.DataFrame({"machine": [r["hardware_name"] or r["hardware_id"] for r in pts],
                       "build": [r["quant"] for r in pts],
                       "price": [float(r["local_usd_per_mtok"]) for r in pts],
                       "speed": [float(r["gen_tps_median"]) for r in pts]})
    x = alt.X("price:Q", scale=alt.Scale(type="log"), title="USD per million generated tokens (log scale)")
    y = alt.Y("speed:Q", title="tokens per second")
    dots = alt.Chart(df).mark_circle(size=70, color=ACCENT, opacity=0.85).encode(
        x=x, y=y, tooltip=["machine", "build", "price", "speed"])
    front = pd.DataFrame(frontier(list(zip(df["price"], df["speed"]))), columns=["price", "speed"])
    layers = [alt.Chart(front).mark_line(color=ACCENT, strokeWidth=1.5).encode(x=x, y=y), dots]
    if api_price:
        api = pd.DataFrame({"price": [float(api_price)], "label": [f"API ${api_price:.2f}"]})
        layers.append(alt.Chart(api).mark_rule(color="#dc2626", strokeDash=[6, 4]).encode(x="price:Q"))
        layers.append(alt.Chart(api).mark_text(color="#dc2626", align="left", dx=4, dy=-4, baseline="bottom")
                      .encode(x="price:Q", y=alt.value(0), text="label:N"))
    return _svg(alt.layer(*layers).properties(width=560, height=260))


def interval_chart(rows: list[dict], label_key: str = "label") -> str | None:
    """Median tok/s with its interval, one line per entry (leaderboards, hardware pages)."""
    pts = [r for r in rows if r.get("gen_tps_median") is not None]
    if not pts:
        return None
    df = pd.DataFrame({"entry": [r[label_key] for r in pts],
                       "median": [float(r["gen_tps_median"]) for r in pts],
                       "low": [float(r.get("gen_tps_ci_low") or r["gen_tps_median"]) for r in pts],
                       "high": [float(r.get("gen_tps_ci_high") or r["gen_tps_median"]) for r in pts]})
    order = list(df["entry"])
    y = alt.Y("entry:N", sort=order, title=None, axis=alt.Axis(labelLimit=300))
    bars = alt.Chart(df).mark_rule(color="#93c5fd", strokeWidth=5).encode(
        x=alt.X("low:Q", title="tokens per second"), x2="high:Q", y=y)
    dots = alt.Chart(df).mark_tick(color=ACCENT, thickness=2, size=14).encode(x="median:Q", y=y, tooltip=["entry", "median"])
    return _svg(alt.layer(bars, dots).properties(width=420, height=max(40, 22 * len(df))))


def bar_chart(labels: list[str], values: list[float], title: str, estimate: list[bool] | None = None) -> str | None:
    if not labels:
        return None
    df = pd.DataFrame({"label": labels, "value": [float(v) for v in values],
                       "kind": ["estimate" if e else "measured" for e in (estimate or [False] * len(labels))]})
    mixed = len(set(df["kind"])) > 1  # a legend only when some bars are estimates and some are not
    chart = alt.Chart(df).mark_bar().encode(
        x=alt.X("value:Q", title=title), y=alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=300)),
        color=alt.Color("kind:N", scale=alt.Scale(domain=["measured", "estimate"], range=[ACCENT, "#cbd5e1"]),
                        legend=alt.Legend(title=None, orient="bottom") if mixed else None))
    return _svg(chart.properties(width=420, height=max(40, 22 * len(df))))
