"""The side-by-side report of ``klc mutate-kafka``: per class and per mutator, how many mutants
Kafka's own tests killed, this suite killed, both, neither; every survivor with its line and
mutator.  ``report.json`` holds it all, ``report.html`` shows it with a chart (matplotlib)."""

from __future__ import annotations

import base64
import collections
import html
import io
import json
import os

from conformance.kafka_mutation.suite import HARNESS, KILLED, TIMED_OUT

KAFKA_DETECTED = ("KILLED", "TIMED_OUT", "MEMORY_ERROR")
SUITE_DETECTED = (KILLED, TIMED_OUT)
BUCKETS = ("both", "kafka_only", "suite_only", "neither", "suite_harness_error")


def bucket(row: dict) -> str:
    """Which of Kafka's tests and this suite detected the mutant (a harness error on the suite's
    side is its own bucket: nothing was judged)."""
    kafka = row["kafka_status"] in KAFKA_DETECTED
    if row["suite_status"] == HARNESS:
        return "suite_harness_error"
    suite = row["suite_status"] in SUITE_DETECTED
    return "both" if kafka and suite else "kafka_only" if kafka else "suite_only" if suite else "neither"


def _counts(rows: list[dict], by: str) -> dict:
    out: dict = collections.defaultdict(lambda: dict.fromkeys(("mutants", *BUCKETS, "kafka_killed", "suite_killed"), 0))
    for r in rows:
        for name in (r[by], "total"):
            c = out[name]
            c["mutants"] += 1
            c[bucket(r)] += 1
            c["kafka_killed"] += r["kafka_status"] in KAFKA_DETECTED
            c["suite_killed"] += r["suite_status"] in SUITE_DETECTED
    return {k: out[k] for k in sorted(out, key=lambda k: (k == "total", k))}


def build(rows: list[dict], meta: dict) -> dict:
    """The report as a value: the counts by class and by mutator, the survivors of each side."""
    rows = sorted(rows, key=lambda r: (r["class"], r["line"], r["mutant"]))
    short = [dict(r, **{"class": r["class"].rsplit(".", 1)[-1]}) for r in rows]

    def listed(pick):
        return [
            {k: r[k] for k in ("mutant", "class", "method", "line", "mutator", "description", "kafka_status",
                               "killing_test", "suite_status", "witness_case", "witness", "covering_cases", "cases_run")} | {"kafka_io": bool(r.get("kafka_io"))}
            for r in short if pick(r)
        ]  # fmt: skip

    return {
        **meta,
        "mutants": len(rows),
        "by_class": _counts(short, "class"),
        "by_mutator": _counts(short, "mutator"),
        "survivors_of_both": listed(lambda r: bucket(r) == "neither"),
        "killed_by_suite_only": listed(lambda r: bucket(r) == "suite_only"),
        "killed_by_kafka_only": listed(lambda r: bucket(r) == "kafka_only"),
        "suite_harness_errors": listed(lambda r: bucket(r) == "suite_harness_error"),
        "suite_seconds": round(sum(r["suite_seconds"] or 0 for r in rows), 1),
    }


def write(out: str, report: dict) -> tuple[str, str]:
    os.makedirs(out, exist_ok=True)
    json_path, html_path = os.path.join(out, "report.json"), os.path.join(out, "report.html")
    with open(json_path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    os.replace(json_path + ".tmp", json_path)
    with open(html_path + ".tmp", "w", encoding="utf-8") as f:
        f.write(to_html(report))
    os.replace(html_path + ".tmp", html_path)
    return json_path, html_path


def chart_png(by_class: dict) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in by_class if n != "total"]
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(names) + 2), 3.6))
    bottom = [0] * len(names)
    colours = {"both": "#2b8a3e", "suite_only": "#74c476", "kafka_only": "#6baed6", "neither": "#e03131",
               "suite_harness_error": "#adb5bd"}  # fmt: skip
    labels = {"both": "both", "suite_only": "this suite only", "kafka_only": "Kafka's tests only",
              "neither": "neither (survivor)", "suite_harness_error": "suite: harness error"}  # fmt: skip
    for b in BUCKETS:
        values = [by_class[n][b] for n in names]
        ax.bar(names, values, bottom=bottom, color=colours[b], label=labels[b])
        bottom = [x + y for x, y in zip(bottom, values)]
    ax.set_ylabel("mutants")
    ax.set_title("PIT mutants of Kafka's classes: who kills them")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def _table(counts: dict, first: str) -> str:
    head = (f"<tr><th>{first}</th><th>mutants</th><th>killed by Kafka's tests</th><th>killed by this suite</th>"
            "<th>both</th><th>Kafka only</th><th>suite only</th><th>neither</th><th>suite harness error</th></tr>")  # fmt: skip
    body = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{c['mutants']}</td><td>{c['kafka_killed']}</td><td>{c['suite_killed']}</td>"
        f"<td>{c['both']}</td><td>{c['kafka_only']}</td><td>{c['suite_only']}</td><td>{c['neither']}</td>"
        f"<td>{c['suite_harness_error']}</td></tr>"
        for n, c in counts.items()
    )
    return f"<table>{head}{body}</table>"


def _listing(rows: list[dict], title: str) -> str:
    if not rows:
        return f"<h2>{html.escape(title)}</h2><p>none</p>"
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r[k] if r[k] is not None else ''))}</td>" for k in
                         ("mutant", "method", "line", "mutator", "description", "kafka_status", "suite_status", "witness_case", "witness")) + "</tr>"
        for r in rows
    )  # fmt: skip
    head = "".join(f"<th>{h}</th>" for h in ("mutant", "method", "line", "mutator", "what", "Kafka's tests", "suite", "witness case", "witness"))
    return f"<h2>{html.escape(title)} ({len(rows)})</h2><table><tr>{head}</tr>{body}</table>"


def to_html(report: dict) -> str:
    png = base64.b64encode(chart_png(report["by_class"])).decode()
    return (
        "<!doctype html><meta charset='utf-8'><title>klc mutate-kafka</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;text-align:left}</style>"
        f"<h1>Mutants of Kafka {html.escape(report['release'])}'s log classes</h1>"
        f"<p>{report['mutants']} PIT mutants ({html.escape(report['mutators'])}) of "
        f"{html.escape(', '.join(report['classes']))}; Kafka's tests: {html.escape(', '.join(t.rsplit('.', 1)[-1] for t in report['kafka_tests']))}; "
        f"this suite: corpus cases by method coverage, then the crash machine ({report['machine_examples']} examples).</p>"
        f"<img src='data:image/png;base64,{png}' alt='mutants by class'>"
        f"<h2>By class</h2>{_table(report['by_class'], 'class')}<h2>By mutator</h2>{_table(report['by_mutator'], 'mutator')}"
        + _listing(report["survivors_of_both"], "Survivors of both")
        + _listing(report["killed_by_suite_only"], "Killed by this suite only (candidate Kafka tests)")
        + _listing(report["killed_by_kafka_only"], "Killed by Kafka's tests only")
        + _listing(report["suite_harness_errors"], "Harness errors on the suite's side")
    )
