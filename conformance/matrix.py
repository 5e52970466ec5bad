"""``klc matrix``: the historical bugs' corpus cases replayed on the Kafka releases, release × case.

A case's ``expect.verdicts`` may record a verdict for ``kafka:VERSION`` (red where the bug lived,
green where it was fixed); the matrix replays every case on every release asked for, shows each
verdict beside the recorded one, and fails when one differs.  Everything else it shows is measured,
not recorded: a release the table's rows (:mod:`conformance.releases`) do not reconcile with the
model fails on what it does otherwise, which the witness names.
"""

from __future__ import annotations

import os

import attrs

from conformance import regressions
from conformance.targets.kafka_jvm import PINNED

# the last release of each line that shipped or fixed a bug of the corpus, back to 0.11 (the
# oldest with an adapter: 0.11 and 1.0 on src/before-1.1); the first UnifiedLog release (3.1.2)
# and the last of 3.x (3.9.1); the first with kafka-storage's UnifiedLog (4.1.1) and the last
# before LogManager moved there too (4.3.1); and the pinned one
RELEASES = (
    "0.11.0.3",
    "1.0.2",
    "1.1.1",
    "2.0.1",
    "2.1.0",
    "2.1.1",
    "2.2.2",
    "2.3.1",
    "2.4.1",
    "2.7.2",
    "2.8.2",
    "3.0.0",
    "3.1.2",
    "3.9.1",
    "4.1.1",
    "4.3.1",
    PINNED,
)


@attrs.frozen
class Cell:
    verdict: str  # pass | fail: <property> | unsupported | known: <finding>
    witness: str | None  # the first violation's one line, or why it was not judged
    recorded: str | None  # the case's expect.verdicts for this release, if any

    @property
    def agrees(self) -> bool:
        return self.recorded is None or self.recorded == self.verdict


HISTORICAL_WITHOUT_A_JIRA = ("time-index-after-unclean-shutdown",)


def target_of(release: str) -> str:
    """The name a case's ``expect.verdicts`` uses for ``release``."""
    return "kafka" if release == PINNED else f"kafka:{release}"


def bug_cases(paths: tuple[str, ...] = ()) -> list[regressions.Case]:
    """The cases of the historical bugs' folders (``KAFKA-*`` and the time index judged corrupt
    after every unclean shutdown, which has no JIRA of its own), or those of ``paths``."""
    named = [c for c in regressions.cases() if c.group != regressions.FOUND]
    if paths:
        wanted = {os.path.realpath(p) for p in paths}
        chosen = [c for c in named if os.path.realpath(c.path) in wanted]
        missing = wanted - {os.path.realpath(c.path) for c in chosen}
        if missing:
            raise ValueError(f"not a named corpus case: {sorted(missing)[0]}")
        return chosen
    return [c for c in named if c.group.startswith("KAFKA-") or c.group in HISTORICAL_WITHOUT_A_JIRA]


def cell(case: regressions.Case, release: str) -> Cell:
    target = target_of(release)
    violation = regressions.replay(case, target)
    verdict = regressions.verdict_of(violation)
    return Cell(verdict, None if violation is None else str(violation), case.verdicts.get(target))


def measure(cases, releases, progress=lambda case, release, c: None) -> dict[tuple[str, str], Cell]:
    grid = {}
    for case in cases:
        for release in releases:
            grid[case.name, release] = c = cell(case, release)
            progress(case, release, c)
    return grid


def short(c: Cell) -> str:
    """A cell as the table prints it: the verdict, the step of a failure, ``=`` when it is the
    recorded one, ``!`` when it differs from it."""
    text = c.verdict
    if c.verdict.startswith("fail") and c.witness and " at step " in c.witness:
        text += "@" + c.witness.split(" at step ", 1)[1].split(":", 1)[0]
    mark = "" if c.recorded is None else "=" if c.agrees else "!"
    return mark + text


WIDTH = 100  # the grid's lines at most (a terminal's, or a review's): wider grids wrap by columns


def render(grid, cases, releases, width: int = WIDTH) -> list[str]:
    """Release x case: a row per release, a column per case labelled ``#N`` (the legend below names
    each case), the columns wrapped into blocks of at most ``width`` characters."""
    labels = {c.name: f"#{i}" for i, c in enumerate(cases, 1)}
    cells = {k: short(v) for k, v in grid.items()}
    head = max(len("release"), *(len(r) for r in releases))
    col = {n: max([len(label)] + [len(cells[n, r]) for r in releases]) for n, label in labels.items()}
    blocks, block = [], []
    for n in labels:
        if block and head + sum(col[m] + 2 for m in [*block, n]) > width:
            blocks.append(block)
            block = []
        block.append(n)
    blocks.append(block)
    lines = []
    for i, block in enumerate(blocks):
        lines += [""] if i else []
        lines.append("release".ljust(head) + "".join("  " + labels[n].ljust(col[n]) for n in block))
        lines += [r.ljust(head) + "".join("  " + cells[n, r].ljust(col[n]) for n in block) for r in releases]
    lines += ["", *(f"{labels[n]:>4}  {n}" for n in labels)]
    return [line.rstrip() for line in lines]
