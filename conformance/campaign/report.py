"""The campaign report: one self-contained HTML file (``<out>/report.html``).

It shows, for the rows of one campaign's results table and its new findings:

1. a summary — tasks, scenarios, failures, errors, distinct signatures; the run's master, executors,
   fuzz stage time and throughput (:func:`scenarios_per_second`); the same counts per target and per
   fault profile;
2. throughput — scenarios per second over the run (tasks binned by the time they finished);
3. failures by violated property and fault family (a failure counts once per family in its scenario);
4. loader branches — how many tasks reached each branch of the loader, then the branches no task reached;
5. the new findings (one per deduplicated signature) with their flakiness and corpus entry;
6. the failing tasks (at most :data:`MAX_FAILING_ROWS`), and the tasks that errored.

Plots are matplotlib figures (Agg backend) inlined as SVG; there is no external CSS, script, image or
font, so the file can be mailed or archived on its own.  Every string taken from the rows is escaped.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

MAX_FAILING_ROWS = 200
MAX_ERROR_ROWS = 50
THROUGHPUT_BINS = 20

# display order (and colour) of the fault families; others follow, sorted
_FAMILY_ORDER = ("process", "prefix", "reorder", "torn", "size_ahead", "metadata", "fail_io", "corrupt", "none")

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wit { font-family: ui-monospace, monospace; font-size: 0.85em; max-width: 40em; word-break: break-word; }
code { font-family: ui-monospace, monospace; }
.note { color: #666; font-style: italic; }
.fail { color: #b00; } .flaky { color: #b60; }
figure { margin: 0.5em 0; } figure svg { max-width: 100%; height: auto; }
"""


# --- values -------------------------------------------------------------------------------------------


def _num(value: object) -> float | None:
    """``value`` as a finite float, or None (None, NaN, text, …)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _int(value: object) -> int:
    f = _num(value)
    return int(f) if f is not None else 0


def _text(value: object, empty: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return empty
    return str(value)


def _strings(value: object) -> list[str]:
    """A list column as a list of distinct strings, in order (None or a bare string are tolerated)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    try:
        items = list(value)  # type: ignore[call-overload]
    except TypeError:
        return []
    return list(dict.fromkeys(str(v) for v in items if v is not None and str(v) != ""))


def _status(row: dict) -> str:
    return _text(row.get("status"))


def _esc(value: object, empty: str = "") -> str:
    return html.escape(_text(value, empty))


def _fmt_float(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    whole = int(round(seconds))
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    clock = f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
    return f"{seconds:,.1f} s ({clock})"


def _label(text: str) -> str:
    """Text for matplotlib: ``$`` would start mathtext."""
    return text.replace("$", r"\$")


# --- numbers ------------------------------------------------------------------------------------------


def _span(rows: Sequence[dict]) -> tuple[float, float] | None:
    """(first start, last finish) over the rows, or None when unknown."""
    starts = [s for s in (_num(r.get("started_at")) for r in rows) if s is not None]
    ends = [e for e in (_num(r.get("finished_at")) for r in rows) if e is not None]
    if not ends:
        return None
    start = min(starts) if starts else min(ends)
    return min(start, min(ends)), max(ends)


def scenarios_per_second(run: dict | None) -> float | None:
    """A campaign's throughput, the one figure the console and the report give: the scenarios its
    tasks ran in the fuzz stage divided by the fuzz stage's wall seconds on the driver's clock, from
    the first wave's submission to the last wave's rows in the table (Spark's start, triage and the
    report are not in it; tasks lost with an executor and rerun cost time but count once).  None
    without a run record or before any wave finished."""
    if not run or not _num(run.get("fuzz_s")):
        return None
    return _int(run.get("scenarios")) / _num(run.get("fuzz_s"))  # type: ignore[operator]


def summarize(rows: Sequence[dict]) -> dict:
    """The summary numbers of the rows (also handy for tests and the CLI)."""
    scenarios = sum(_int(r.get("scenarios")) for r in rows)
    fails = [r for r in rows if _status(r) == "fail"]
    return {
        "tasks": len(rows),
        "scenarios": scenarios,
        "passes": sum(1 for r in rows if _status(r) == "pass"),
        "failures": len(fails),
        "errors": sum(1 for r in rows if _status(r) == "error"),
        "signatures": len({_text(r.get("signature")) for r in fails} - {""}),
        "task_seconds": sum(_num(r.get("duration_s")) or 0.0 for r in rows),
    }


def _group_counts(rows: Sequence[dict], key: str) -> list[tuple[str, dict]]:
    """Per value of ``key``: tasks, scenarios, failures, errors (sorted by value)."""
    groups: dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(_text(r.get(key), "(none)"), Counter())
        g["tasks"] += 1
        g["scenarios"] += _int(r.get("scenarios"))
        g["failures"] += _status(r) == "fail"
        g["errors"] += _status(r) == "error"
    return sorted(groups.items())


def throughput(rows: Sequence[dict], bins: int = THROUGHPUT_BINS) -> tuple[list[float], list[float], float] | None:
    """Scenarios per second over the run: (bin left edges in seconds since the start, rates, bin width).

    Tasks are binned by ``finished_at``; None with fewer than two timed rows or a zero span.
    """
    timed = [r for r in rows if _num(r.get("finished_at")) is not None]
    span = _span(timed)
    if len(timed) < 2 or span is None or span[1] - span[0] <= 0:
        return None
    start, end = span
    width = (end - start) / bins
    totals = [0.0] * bins
    for r in timed:
        i = min(int((_num(r.get("finished_at")) - start) / width), bins - 1)  # type: ignore[operator]
        totals[max(i, 0)] += _int(r.get("scenarios"))
    return [i * width for i in range(bins)], [t / width for t in totals], width


def failure_families(rows: Sequence[dict]) -> dict[str, Counter]:
    """property → fault family → failures (a failure counts once per family, "none" without one)."""
    out: dict[str, Counter] = {}
    for r in rows:
        if _status(r) != "fail":
            continue
        prop = _text(r.get("property")) or "unknown"
        for family in _strings(r.get("fault_families")) or ["none"]:
            out.setdefault(prop, Counter())[family] += 1
    return dict(sorted(out.items()))


def branch_counts(rows: Sequence[dict], all_branches: Iterable[str]) -> dict[str, int]:
    """branch → tasks that reached it: ``all_branches`` in order, then branches seen only in rows."""
    counts = Counter(b for r in rows for b in _strings(r.get("branches")))
    known = [str(b) for b in all_branches or ()]
    out = {b: counts.get(b, 0) for b in known}
    for b in sorted(set(counts) - set(out)):
        out[b] = counts[b]
    return out


def _families_in_order(names: Iterable[str]) -> list[str]:
    names = set(names)
    return [f for f in _FAMILY_ORDER if f in names] + sorted(names - set(_FAMILY_ORDER))


# --- plots --------------------------------------------------------------------------------------------


def _svg(fig, salt: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog or doctype); closes the figure."""
    import matplotlib.pyplot as plt  # matplotlib: optional and slow to import

    buf = io.StringIO()
    try:
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    finally:
        plt.close(fig)
    text = buf.getvalue()
    start = text.find("<svg")
    svg = _unique_ids(text[start:] if start >= 0 else text, salt)
    return f'<figure class="plot" data-plot="{html.escape(salt)}">{svg}</figure>'


_ID_OR_REF = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')


def _unique_ids(svg: str, prefix: str) -> str:
    """Prefix the SVG's element ids (and references to them): every plot says ``figure_1``, ``axes_1``, …"""
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    return _ID_OR_REF.sub(lambda m: m.group(1) + (f"{prefix}-{m.group(2)}" if m.group(2) in ids else m.group(2)), svg)


def _pyplot():
    import matplotlib  # matplotlib: optional and slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_context(salt: str):
    """Text as SVG text (small, selectable), fixed clip-path ids (same plot, same SVG), smaller type."""
    import matplotlib  # matplotlib: optional and slow to import

    return matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"klc-{salt}", "font.size": 9})


def _throughput_plot(rows: Sequence[dict]) -> str:
    data = throughput(rows)
    if data is None:
        return '<p class="note">Too few tasks, or no time span, to plot scenarios per second over time.</p>'
    lefts, rates, width = data
    plt = _pyplot()
    with _plot_context("throughput"):
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.bar(lefts, rates, width=width, align="edge", color="#4c78a8", edgecolor="white", linewidth=0.5)
        ax.set_xlabel("seconds since the first task started (tasks binned by finish time)")
        ax.set_ylabel("scenarios / s")
        ax.set_xlim(0, lefts[-1] + width)
        ax.grid(axis="y", alpha=0.3)
        return _svg(fig, "throughput")


def _failure_plot(counts: dict[str, Counter]) -> str:
    if not counts:
        return '<p class="note">no failures</p>'
    props = list(counts)
    families = _families_in_order(f for c in counts.values() for f in c)
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator  # matplotlib: optional and slow to import

    with _plot_context("failures"):
        cmap = plt.get_cmap("tab10")
        fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(props) + 2), 3.5))
        bottoms = [0] * len(props)
        for i, family in enumerate(families):
            heights = [counts[p].get(family, 0) for p in props]
            colour = cmap(_FAMILY_ORDER.index(family) if family in _FAMILY_ORDER else i % 10)
            ax.bar(range(len(props)), heights, bottom=bottoms, label=_label(family), color=colour)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        ax.set_xticks(range(len(props)), [_label(p) for p in props], rotation=20, ha="right")
        ax.set_ylabel("failures (× fault families)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        handles, labels = ax.get_legend_handles_labels()  # top of the stack first
        ax.legend(
            handles[::-1], labels[::-1], title="fault family", fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left"
        )
        ax.grid(axis="y", alpha=0.3)
        return _svg(fig, "failures")


def _branch_plot(counts: dict[str, int], tasks: int) -> str:
    if not counts:
        return '<p class="note">No loader branches known.</p>'
    names = list(counts)
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator  # matplotlib: optional and slow to import

    with _plot_context("branches"):
        fig, ax = plt.subplots(figsize=(9, 0.25 * len(names) + 1))
        y = range(len(names))
        values = [counts[n] for n in names]
        colours = ["#4c78a8" if v else "#d62728" for v in values]
        ax.barh(y, values, color=colours)
        ax.set_yticks(y, [_label(n) for n in names])
        for tick, v in zip(ax.get_yticklabels(), values, strict=True):
            if not v:
                tick.set_color("#d62728")  # not reached
        ax.invert_yaxis()
        ax.set_xlabel(f"tasks that reached the branch (of {tasks}; red: none)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0, max([*values, 1]) * 1.1)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v}", va="center", fontsize=7)
        ax.grid(axis="x", alpha=0.3)
        return _svg(fig, "branches")


# --- HTML ---------------------------------------------------------------------------------------------


def _table(headers: Sequence[str], body: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from escaped cells (a cell may be ``(html, css class)``)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    lines = []
    for row in body:
        cells = []
        for cell in row:
            text, klass = cell if isinstance(cell, tuple) else (cell, "")
            cells.append(f'<td class="{klass}">{text}</td>' if klass else f"<td>{text}</td>")
        lines.append(f"<tr>{''.join(cells)}</tr>")
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def _n(value: object) -> tuple[str, str]:
    return html.escape(f"{value:,}" if isinstance(value, int) else _text(value)), "num"


def _summary_section(rows: Sequence[dict], findings: Sequence[dict], run: dict | None) -> str:
    s = summarize(rows)
    flaky = sum(1 for f in findings if f.get("flaky"))
    run = run or {}
    items = [
        ("tasks", _n(s["tasks"])),
        ("scenarios", _n(s["scenarios"])),
        ("passes", _n(s["passes"])),
        ("failures", _n(s["failures"])),
        ("errors", _n(s["errors"])),
        ("distinct signatures", _n(s["signatures"])),
        ("new findings", _n(f"{len(findings)} ({flaky} flaky)")),
        ("master", (html.escape(_text(run.get("master"), "—")), "")),
        ("executors", (html.escape(_run_executors(run)), "num")),
        ("fuzz stage", (_fmt_duration(_num(run.get("fuzz_s"))), "num")),
        ("scenarios / s", (_fmt_float(scenarios_per_second(run), 2), "num")),
        ("whole campaign", (_fmt_duration(_num(run.get("total_s"))), "num")),
        ("task time (sum)", (_fmt_duration(s["task_seconds"]), "num")),
    ]
    if run.get("status") not in (None, "finished"):
        items.append(("status", (html.escape(f"{_text(run.get('status'))}: did not finish"), "")))
    runs = sorted({_text(r.get("run_id")) for r in rows} - {""})
    commits = sorted({_text(r.get("commit")) for r in rows} - {""})
    if runs:
        items.append(("run", (html.escape(", ".join(runs)), "")))
    if commits:
        items.append(("commit", (html.escape(", ".join(commits)), "")))
    build = run.get("kafka_build") if isinstance(run.get("kafka_build"), dict) else None
    if build:  # what a kafka target judged: the build's version, commit and jars
        judged = f"Kafka {build.get('version')} (commit {build.get('commit')}, jars sha256:{_text(build.get('digest'))[:16]}, {build.get('source')})"
        items.append(("kafka build", (html.escape(judged), "")))
    main = _table(["", "value"], [(html.escape(k), v) for k, v in items], "summary")
    groups = [_group_table(rows, "target", "target"), _group_table(rows, "profile", "fault profile")]
    return f'<h2 id="summary">Summary</h2>{main}{"".join(groups)}'


def _run_executors(run: dict) -> str:
    """``2 (4 cores)``, and each wave's count when executors came and went (a worker lost)."""
    if run.get("executors") is None:
        return "—"
    text = f"{_int(run.get('executors'))} ({_int(run.get('cores'))} cores)"
    per_wave = [_int(w.get("executors")) for w in run.get("waves") or () if isinstance(w, dict)]
    if len(set(per_wave)) > 1:
        text += "; per wave: " + " ".join(map(str, per_wave))
    return text


def _group_table(rows: Sequence[dict], key: str, title: str) -> str:
    body = [
        (html.escape(name), _n(c["tasks"]), _n(c["scenarios"]), _n(c["failures"]), _n(c["errors"]))
        for name, c in _group_counts(rows, key)
    ]
    return _table([title, "tasks", "scenarios", "failures", "errors"], body, f"by-{key}")


def _failure_section(rows: Sequence[dict]) -> str:
    counts = failure_families(rows)
    parts = ['<h2 id="failures">Failures by property and fault family</h2>', _failure_plot(counts)]
    if counts:
        families = _families_in_order(f for c in counts.values() for f in c)
        body = [
            (html.escape(p), *(_n(c.get(f, 0)) for f in families), _n(sum(1 for r in rows if _is_fail(r, p))))
            for p, c in counts.items()
        ]
        parts.append(_table(["property", *families, "failures"], body, "failure-families"))
        parts.append('<p class="note">A failure whose scenario has several fault families counts once per family.</p>')
    return "".join(parts)


def _is_fail(row: dict, prop: str) -> bool:
    return _status(row) == "fail" and (_text(row.get("property")) or "unknown") == prop


def _branch_section(rows: Sequence[dict], all_branches: Sequence[str]) -> str:
    counts = branch_counts(rows, all_branches)
    known = {str(b) for b in all_branches or ()}
    unreached = [b for b, c in counts.items() if c == 0]
    extra = [b for b in counts if b not in known]
    parts = ['<h2 id="branches">Loader branches</h2>', _branch_plot(counts, len(rows))]
    if extra:
        listed = "".join(f"<li><code>{html.escape(b)}</code></li>" for b in extra)
        parts.append(f'<p>Reached but not in the list of known branches:</p><ul id="unknown-branches">{listed}</ul>')
    parts.append(f'<h3 id="not-reached-title">Branches not reached ({len(unreached)} of {len(counts)})</h3>')
    if unreached:
        listed = "".join(f"<li><code>{html.escape(b)}</code></li>" for b in unreached)
        parts.append(f'<ul id="not-reached">{listed}</ul>')
    else:
        parts.append('<p class="note" id="not-reached">Every branch was reached by at least one task.</p>')
    return "".join(parts)


def _findings_section(findings: Sequence[dict]) -> str:
    head = '<h2 id="findings">New findings</h2>'
    if not findings:
        return f'{head}<p class="note">No new findings.</p>'
    body = []
    for f in findings:
        flaky = bool(f.get("flaky"))
        reproduced = f"{_int(f.get('reproduced'))}/{_int(f.get('attempts'))}"
        flag = (f"yes ({reproduced})", "flaky") if flaky else (f"no ({reproduced})", "")
        body.append(
            (
                f"<code>{_esc(f.get('signature'))}</code>",
                _esc(f.get("property")),
                _esc(f.get("target")),
                _n(_int(f.get("seed")) if f.get("seed") is not None else ""),
                flag,
                _n(_int(f.get("n_steps"))),
                (_esc(f.get("witness")), "wit"),
                f"<code>{_esc(f.get('corpus_path'), '—')}</code>",
            )
        )
    headers = ["signature", "property", "target", "seed", "flaky (reproduced)", "steps", "witness", "corpus entry"]
    return head + _table(headers, body, "findings")


def _failing_section(rows: Sequence[dict]) -> str:
    fails = [r for r in rows if _status(r) == "fail"]
    head = f'<h2 id="failing-tasks">Failing tasks ({len(fails)})</h2>'
    if not fails:
        return f'{head}<p class="note">no failures</p>'
    shown = sorted(fails, key=lambda r: (_text(r.get("signature")), _int(r.get("seed"))))[:MAX_FAILING_ROWS]
    body = [
        (
            _n(_int(r.get("seed"))),
            _esc(r.get("target")),
            _esc(r.get("property")),
            f"<code>{_esc(r.get('signature'))}</code>",
            (_esc(r.get("witness")), "wit"),
        )
        for r in shown
    ]
    more = f'<p class="note">Showing {len(shown)} of {len(fails)}.</p>' if len(fails) > len(shown) else ""
    return head + _table(["seed", "target", "property", "signature", "witness"], body, "failing") + more


def _error_section(rows: Sequence[dict]) -> str:
    errors = [r for r in rows if _status(r) == "error"]
    if not errors:
        return ""
    shown = errors[:MAX_ERROR_ROWS]
    body = [(_n(_int(r.get("seed"))), _esc(r.get("target")), (_esc(_last_line(r.get("error"))), "wit")) for r in shown]
    more = f'<p class="note">Showing {len(shown)} of {len(errors)}.</p>' if len(errors) > len(shown) else ""
    head = f'<h2 id="errors">Tasks that errored ({len(errors)})</h2>'
    return head + _table(["seed", "target", "error"], body, "errors") + more


def _last_line(value: object) -> str:
    lines = [line for line in _text(value).strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def render_report(
    rows: Sequence[dict] | None,
    findings: Sequence[dict] | None,
    all_branches: Sequence[str] | None,
    title: str = "klc campaign",
    run: dict | None = None,
) -> str:
    """The report as HTML text (see the module docstring); ``run`` is the run record
    (``OUT/runs/<run_id>.json``: master, executors, fuzz stage seconds)."""
    rows = [r for r in rows or () if isinstance(r, dict)]
    findings = [f for f in findings or () if isinstance(f, dict)]
    all_branches = [str(b) for b in all_branches or ()]
    title_html = html.escape(_text(title) or "klc campaign")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title_html}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title_html}</h1>",
    ]
    if not rows:
        parts.append('<p class="note" id="no-tasks">No tasks ran: the results table is empty.</p>')
    parts.append(_summary_section(rows, findings, run if isinstance(run, dict) else None))
    parts.append(f'<h2 id="throughput">Scenarios per second</h2>{_throughput_plot(rows)}')
    parts.append(_failure_section(rows))
    parts.append(_branch_section(rows, all_branches))
    parts.append(_findings_section(findings))
    parts.append(_failing_section(rows))
    parts.append(_error_section(rows))
    parts.append("</body></html>\n")
    return "\n".join(p for p in parts if p)


def write_report(
    path: str,
    rows: list[dict],
    findings: list[dict],
    all_branches: Sequence[str],
    title: str = "klc campaign",
    run: dict | None = None,
) -> None:
    """Write the report to ``path`` (UTF-8), replacing it."""
    text = render_report(rows, findings, all_branches, title, run)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


__all__ = [
    "render_report",
    "write_report",
    "summarize",
    "scenarios_per_second",
    "throughput",
    "failure_families",
    "branch_counts",
]
