"""The campaign's HTML report (conformance/campaign/report.py) from synthetic results rows."""

from __future__ import annotations

import re

import pytest

from conformance.campaign.report import render_report, scenarios_per_second, summarize, throughput, write_report

BRANCHES = (
    "5.2.4 .swap renamed",
    "5.6.1 unflushed segment recovered",
    "5.6.3 no segment left: empty segment created",
)
REACHED = "5.6.1 unflushed segment recovered"
UNREACHED = "5.6.3 no segment left: empty segment created"


def _row(seed: int, status: str = "pass", **kw) -> dict:
    row = {
        "run_id": "run-1",
        "commit": "abc1234",
        "seed": seed,
        "profile": "power-loss",
        "target": "impl",
        "fault_kinds": ["torn", "prefix"],
        "max_crashes": 2,
        "status": status,
        "property": None,
        "signature": None,
        "witness": None,
        "steps": None,
        "n_steps": 0,
        "scenarios": 10,
        "duration_s": 10.0,
        "started_at": 1000.0 + seed * 10,
        "finished_at": 1010.0 + seed * 10,
        "branches": [REACHED],
        "fault_families": [],
    }
    row.update(kw)
    return row


def _fail(seed: int, prop: str, families: list[str], witness: str = "batch 3 lost", **kw) -> dict:
    return _row(
        seed,
        "fail",
        property=prop,
        signature=f"{prop}-{seed:010x}",
        witness=witness,
        steps='{"steps": []}',
        n_steps=7,
        fault_families=families,
        **kw,
    )


@pytest.fixture
def rows() -> list[dict]:
    # 10 tasks over 1000..1100 s, 90 scenarios (the error ran none), 3 failures with 3 signatures, 1 error
    out = [_row(s) for s in range(6)]
    out.append(_fail(6, "durable", ["torn", "prefix"], witness="<script>alert('x')</script> & more"))
    out.append(_fail(7, "durable", [], target="mutant:skip-flush"))
    out.append(_fail(8, "conforms", ["metadata"], profile="metadata"))
    out.append(_row(9, "error", branches=None, property=None, scenarios=None, error="boom\nValueError: x"))
    return out


@pytest.fixture
def findings() -> list[dict]:
    return [
        {
            "signature": "durable-3fa9c21b0d",
            "property": "durable",
            "witness": "batch <b> lost",
            "target": "impl",
            "seed": 6,
            "flaky": False,
            "reproduced": 3,
            "attempts": 3,
            "corpus_path": "corpora/found/durable-3fa9c21b0d",
            "n_steps": 5,
        },
        {
            "signature": "conforms-00ff00ff00",
            "property": "conforms",
            "witness": None,
            "target": None,
            "seed": None,
            "flaky": True,
            "reproduced": 1,
            "attempts": 3,
            "corpus_path": None,
            "n_steps": None,
        },
    ]


def _table(html: str, cls: str) -> dict[str, list[str]]:
    """The rows of ``<table class=cls>`` keyed by their first cell (the header row under "")."""
    m = re.search(rf'<table class="{cls}">(.*?)</table>', html, re.S)
    assert m, f"no table {cls!r}"
    rows = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", m.group(1))]
    return {("" if i == 0 else r[0]): r[1:] for i, r in enumerate(rows)}


def _summary_value(html: str, name: str) -> str:
    m = re.search(rf"<tr><td>{re.escape(name)}</td><td(?: class=\"num\")?>([^<]*)</td></tr>", html)
    assert m, f"no summary line {name!r}"
    return m.group(1)


def _not_reached(html: str) -> str:
    m = re.search(r'<ul id="not-reached">(.*?)</ul>', html, re.S)
    assert m, "no list of unreached branches"
    return m.group(1)


def test_writes_one_standalone_html_file(tmp_path, rows, findings):
    path = tmp_path / "report.html"
    write_report(str(path), rows, findings, BRANCHES, title="nightly <run>")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert text.rstrip().endswith("</html>")
    assert "<title>nightly &lt;run&gt;</title>" in text
    assert text.count("<svg") == 3  # throughput, failures, branches
    assert "<?xml" not in text and "<!DOCTYPE svg" not in text
    for external in ('src="http', "src='http", 'href="http', "href='http", "<link", "@import", "url(http"):
        assert external not in text, external
    assert "<script" not in text


def test_summary_numbers(rows, findings):
    html = render_report(rows, findings, BRANCHES)
    assert _summary_value(html, "tasks") == "10"
    assert _summary_value(html, "scenarios") == "90"  # the errored task ran none (None)
    assert _summary_value(html, "failures") == "3"
    assert _summary_value(html, "errors") == "1"
    assert _summary_value(html, "passes") == "6"
    assert _summary_value(html, "distinct signatures") == "3"
    assert _summary_value(html, "new findings") == "2 (1 flaky)"
    assert summarize(rows)["scenarios"] == 90
    # no run record: no master, no fuzz stage, no throughput (the rows' own span is not it)
    assert _summary_value(html, "master") == "—" and _summary_value(html, "scenarios / s") == "—"


RUN = {
    "master": "spark://h:7077", "fuzz_s": 40.0, "total_s": 61.5, "scenarios": 90, "executors": 2, "cores": 4,
    "status": "finished", "waves": [{"executors": 2}, {"executors": 1}, {"executors": 2}],
}  # fmt: skip


def test_the_run_record_gives_master_executors_and_the_one_throughput_figure(rows, findings):
    """The rows' span (first start 1000, last finish 1100: 100 s) is not the fuzz stage's wall time."""
    html = render_report(rows, findings, BRANCHES, run=RUN)
    assert _summary_value(html, "master") == "spark://h:7077"
    assert _summary_value(html, "executors") == "2 (4 cores); per wave: 2 1 2"
    assert _summary_value(html, "fuzz stage").startswith("40.0 s")
    assert _summary_value(html, "whole campaign").startswith("61.5 s")
    assert _summary_value(html, "scenarios / s") == "2.25" == f"{scenarios_per_second(RUN):.2f}"
    assert "<td>status</td>" not in html
    aborted = render_report(rows, findings, BRANCHES, run=RUN | {"status": "aborted"})
    assert _summary_value(aborted, "status") == "aborted: did not finish"


@pytest.mark.parametrize(
    "run,rate",
    [({"scenarios": 60, "fuzz_s": 24.0}, 2.5), ({"scenarios": 60, "fuzz_s": 0.0}, None), (None, None), ({}, None)],
)
def test_scenarios_per_second_is_scenarios_over_the_fuzz_stage(run, rate):
    assert scenarios_per_second(run) == rate


def test_counts_per_target_and_profile(rows, findings):
    html = render_report(rows, findings, BRANCHES)
    by_target = _table(html, "by-target")
    assert by_target[""] == ["tasks", "scenarios", "failures", "errors"]
    assert by_target["impl"] == ["9", "80", "2", "1"]
    assert by_target["mutant:skip-flush"] == ["1", "10", "1", "0"]
    by_profile = _table(html, "by-profile")
    assert by_profile["metadata"] == ["1", "10", "1", "0"]
    assert by_profile["power-loss"] == ["9", "80", "2", "1"]


def test_failures_by_property_and_family(rows, findings):
    html = render_report(rows, findings, BRANCHES)
    table = _table(html, "failure-families")
    assert table[""] == ["prefix", "torn", "metadata", "none", "failures"]
    # durable: seed 6 counts under torn and prefix, seed 7 (no family) under none; 2 failures
    assert table["durable"] == ["1", "1", "0", "1", "2"]
    assert table["conforms"] == ["0", "0", "1", "0", "1"]


def test_unreached_branches_are_listed(rows, findings):
    rows = [*rows, _row(10, branches=["an extra branch"])]
    html = render_report(rows, findings, BRANCHES)
    listed = _not_reached(html)
    assert UNREACHED in listed and "5.2.4 .swap renamed" in listed
    assert REACHED not in listed
    assert "Branches not reached (2 of 4)" in html
    assert '<ul id="unknown-branches"><li><code>an extra branch</code></li></ul>' in html


def test_every_branch_reached(findings):
    rows = [_row(0, branches=list(BRANCHES)), _row(1, branches=[REACHED])]
    html = render_report(rows, findings, BRANCHES)
    assert '<ul id="not-reached">' not in html
    assert "Branches not reached (0 of 3)" in html


def test_row_strings_are_escaped(rows, findings):
    html = render_report(rows, findings, BRANCHES)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in html
    assert "batch &lt;b&gt; lost" in html and "batch <b> lost" not in html


def test_findings_and_failing_tasks(rows, findings):
    html = render_report(rows, findings, BRANCHES)
    table = re.search(r'<table class="findings">(.*?)</table>', html, re.S).group(1)
    assert "durable-3fa9c21b0d" in table and "conforms-00ff00ff00" in table
    assert "corpora/found/durable-3fa9c21b0d" in table
    assert "no (3/3)" in table and "yes (1/3)" in table
    failing = re.search(r'<table class="failing">(.*?)</table>', html, re.S).group(1)
    assert failing.count("<tr>") == 4  # header + 3 failures
    for sig in ("durable-0000000006", "durable-0000000007", "conforms-0000000008"):
        assert sig in failing
    assert "Failing tasks (3)" in html
    errors = re.search(r'<table class="errors">(.*?)</table>', html, re.S).group(1)
    assert "ValueError: x" in errors


def test_failing_table_is_capped():
    rows = [_fail(s, "prefix", ["torn"]) for s in range(250)]
    html = render_report(rows, [], BRANCHES)
    failing = re.search(r'<table class="failing">(.*?)</table>', html, re.S).group(1)
    assert failing.count("<tr>") == 201
    assert "Showing 200 of 250." in html


def test_throughput_bins():
    rows = [_row(s, scenarios=5, started_at=0.0, finished_at=float(s + 1)) for s in range(20)]
    lefts, rates, width = throughput(rows)
    assert len(lefts) == 20 and width == pytest.approx(1.0)
    assert sum(r * width for r in rates) == pytest.approx(100)


def test_empty_rows(tmp_path):
    path = tmp_path / "report.html"
    write_report(str(path), [], [], BRANCHES)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "No tasks ran" in html
    assert _summary_value(html, "tasks") == "0"
    assert "no failures" in html
    assert "Too few tasks" in html
    assert all(b in _not_reached(html) for b in BRANCHES)


def test_none_values_everywhere():
    keys = list(_row(0))
    rows = [dict.fromkeys(keys), dict.fromkeys(keys) | {"status": "fail"}, dict.fromkeys(keys) | {"status": "error"}]
    html = render_report(rows, [dict.fromkeys(["signature", "flaky", "reproduced", "attempts"])], None)
    assert _summary_value(html, "failures") == "1"
    assert _summary_value(html, "scenarios / s") == "—"
    assert "<td>unknown</td>" in html  # a failure without a property


def test_single_task_has_no_throughput_plot(findings):
    html = render_report([_row(0)], findings, BRANCHES)
    assert "Too few tasks" in html
    assert html.count("<svg") == 1  # only the branch plot


def test_plot_ids_are_unique_on_the_page(rows, findings):
    html = render_report(rows, findings, BRANCHES)
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    for ref in re.findall(r'(?:url\(#|href="#)([^")]+)', html):
        assert ref in ids, ref
