"""The report as one self-contained HTML page: the figures (report/warehouse.py) in the template
`report.html.j2`, charts drawn by pygal as inline SVG (no script: pygal's tooltip script would be
fetched from the network, so charts are static and every number is also in a table beside): the
page holds no script at all, and pygal's stylesheet once (`chart_style`), not in every chart."""
from __future__ import annotations

from functools import lru_cache

import pygal
from jinja2 import Environment, StrictUndefined, select_autoescape
from pygal.style import Style

from tablespec.plan.render import template_loader
from tablespec.report.warehouse import map_tables
from tablespec.spec.sizes import human_bytes

STYLE = Style(background="white", plot_background="white", foreground="#333", foreground_strong="#111",
              foreground_subtle="#ccc", font_family="system-ui, -apple-system, 'Segoe UI', sans-serif",
              colors=("#3b6fb6", "#e08a2c", "#4a9a5b", "#c0504d", "#8064a2", "#4bacc6", "#9b8b5a", "#d36f9e"),
              title_font_size=14, label_font_size=11, major_label_font_size=11, legend_font_size=11)
COMMON = {"style": STYLE, "js": [], "css": [], "width": 640, "height": 300, "disable_xml_declaration": True,
          "show_y_guides": True, "legend_at_bottom": True, "truncate_label": 18, "x_label_rotation": 30,
          "print_values": False, "margin": 8}
FEW_POINTS = 12   # a line chart of at most this many points labels and marks each
MOST = 30   # partitions and days a chart shows (the largest partitions, the latest days)


def _bare(root):
    """pygal's chart less its stylesheet (the page holds it once) and the script it adds for its
    tooltips (their configuration: nothing runs it without them)."""
    defs = root.find("defs")
    for node in defs.findall("style") + defs.findall("script"):
        defs.remove(node)
    return root


def _svg(chart) -> str:
    """The chart as inline SVG (the template marks it safe: pygal escapes the text it draws)."""
    chart.add_xml_filter(_bare)
    return chart.render(is_unicode=True)


def chart_style(series: int) -> str:
    """pygal's stylesheet for the page's charts, with colours for `series` series: drawn once with a
    chart of pygal's own stylesheets, scoped to pygal's chart class instead of that chart's id."""
    chart = pygal.Bar(**{**COMMON, "css": pygal.Config().css})
    for n in range(series):
        chart.add(str(n), [1])
    style: list[str] = []

    def take(root):
        style.append(root.find("defs/style").text)
        return root
    chart.add_xml_filter(take)
    chart.render()
    return style[0].replace(f"#chart-{chart.uuid}", ".pygal-chart")


def _size_range(b: dict) -> str:
    return f"{human_bytes(b['from'])}-{human_bytes(b['to'])}" if b["to"] else f">= {human_bytes(b['from'])}"


def file_size_chart(files: dict) -> str:
    chart = pygal.Bar(title=f"Files by size (small-file limit {human_bytes(files['smallFileLimit'])}, "
                            f"target {human_bytes(files['targetFileSize'])})", show_legend=False, **COMMON)
    chart.x_labels = [_size_range(b) for b in files["histogram"]]
    chart.add("files", [b["files"] for b in files["histogram"]])
    return _svg(chart)


def _unit(largest: int) -> tuple[str, int]:
    """The binary unit bytes up to `largest` read best in (B, KiB, MiB, ...)."""
    unit, size = "B", 1
    for name in ("KiB", "MiB", "GiB", "TiB"):
        if largest < size * 1024:
            break
        unit, size = name, size * 1024
    return unit, size


def partition_chart(parts: dict) -> str:
    largest = sorted(parts["byPartition"], key=lambda p: -p["bytes"])[:MOST]
    unit, size = _unit(max((p["bytes"] for p in largest), default=0))
    chart = pygal.Bar(title="Partitions: bytes and rows" + (f" (the {MOST} largest)" if len(parts["byPartition"]) > MOST else ""),
                      **COMMON)
    chart.x_labels = [p["partition"] or "(non-partitioned)" for p in largest]
    chart.add(f"{unit} (left axis)", [round(p["bytes"] / size, 2) for p in largest])
    if parts["rowsKnown"]:
        chart.add("rows (right axis)", [p["rows"] for p in largest], secondary=True)
    return _svg(chart)


def bucket_chart(buckets: dict) -> str:
    listed = buckets["byPartition"][-MOST:]
    chart = pygal.Bar(title="Bucket fill: rows per bucket by partition", **COMMON)
    chart.x_labels = [p["partition"] or "(non-partitioned)" for p in listed]
    for key, name in (("rowsMin", "fewest rows"), ("rowsMean", "mean rows"), ("rowsMax", "most rows")):
        chart.add(name, [p[key] for p in listed])
    return _svg(chart)


def _kinds(days: list[dict]) -> list[str]:
    """The series of an instants chart: "commit UPSERT", "clean", ..."""
    return sorted({k for d in days for k in d if k != "day"})


def instants_chart(timeline: dict) -> str:
    days = timeline["byDay"][-MOST:]
    kinds = _kinds(days)
    chart = pygal.StackedBar(title="Completed instants per day, by action and operation", **COMMON)
    chart.x_labels = [d["day"] for d in days]
    for kind in kinds:
        chart.add(kind, [d.get(kind, 0) for d in days])
    return _svg(chart)


def commits_chart(timeline: dict) -> str:
    recent = timeline["recent"]
    few = len(recent) <= FEW_POINTS
    chart = pygal.Line(title=f"The last {len(recent)} commits: rows written and seconds taken", show_x_labels=few,
                       show_dots=few, **COMMON)
    if few:   # more: labels and dots would not be readable (and each dot is SVG nodes to draw); the JSON's `recent` lists them
        chart.x_labels = [c["instant"] for c in recent]
    chart.add("rows (left axis)", [c["rows"] for c in recent])
    seconds = [c["seconds"] for c in recent]
    if any(s is not None for s in seconds):   # unknown everywhere (an object store's whole-second mtimes): pygal cannot scale an empty axis
        chart.add("seconds (right axis)", seconds, secondary=True)
    return _svg(chart)


def score_chart(tables: list[dict]) -> str:
    shown = sorted(tables, key=lambda t: t["score"])[:MOST]
    chart = pygal.HorizontalBar(title="Score per table" + (f" (the {MOST} lowest)" if len(tables) > MOST else ""),
                                show_legend=False, range=(0, 100), **{**COMMON, "height": max(160, 24 * len(shown) + 80)})
    chart.x_labels = [t["name"] for t in shown]
    chart.add("score", [t["score"] for t in shown])
    return _svg(chart)


def activity_chart(overview: dict) -> str:
    days = overview["instantsByDay"][-MOST:]
    chart = pygal.Bar(title="Completed instants per day, all tables", show_legend=False, **COMMON)
    chart.x_labels = [d["day"] for d in days]
    chart.add("instants", [d["instants"] for d in days])
    return _svg(chart)


def charts(entry: dict) -> dict[str, str]:
    """A table's charts by section (none for an unreadable table, none where there is nothing to draw)."""
    if entry["error"]:
        return {}
    out = {}
    if entry["files"]["count"]:
        out["files"] = file_size_chart(entry["files"])
        out["partitions"] = partition_chart(entry["partitions"])
    if entry["partitions"]["buckets"] and entry["partitions"]["buckets"]["byPartition"] and entry["partitions"]["rowsKnown"]:
        out["buckets"] = bucket_chart(entry["partitions"]["buckets"])
    if entry["timeline"]["byDay"]:
        out["instants"] = instants_chart(entry["timeline"])
    if entry["timeline"]["recent"]:
        out["commits"] = commits_chart(entry["timeline"])
    return out


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(loader=template_loader(), undefined=StrictUndefined, autoescape=select_autoescape(["j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["bytes"] = lambda n: "-" if n is None else human_bytes(int(n))
    env.filters["pct"] = lambda x: "-" if x is None else f"{x:.0%}"
    return env


def render_html(report: dict, drawn: list[dict[str, str]] | None = None) -> str:
    """The page: the overview, then one section per table (worst score first). `drawn`: each
    table's `charts`, in the report's order, if already drawn (warehouse.drawn_report)."""
    if drawn is None:
        drawn = map_tables(charts, report["tables"], report["tables"][0]["location"]) if report["tables"] else []
    tables = sorted(zip(report["tables"], drawn), key=lambda td: (td[0]["score"], td[0]["name"]))
    series = max([len(STYLE.colors)] + [len(_kinds(t["timeline"]["byDay"][-MOST:])) for t in report["tables"] if not t["error"]])
    return _env().get_template("report.html.j2").render(
        chart_style=chart_style(series),
        report=report, overview=report["overview"], tables=tables,
        score_chart=score_chart(report["tables"]) if report["tables"] else None,
        activity_chart=activity_chart(report["overview"]) if report["overview"]["instantsByDay"] else None)
