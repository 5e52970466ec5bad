"""``klc bisect``: the first Kafka release at which a corpus case's verdict changes.

The releases are Maven Central's (the ``maven-metadata.xml`` of ``kafka_2.13`` and, for the releases
before 2.4, ``kafka_2.12``): every published ``MAJOR.MINOR.PATCH``, in version order, that an adapter
runs (0.11–4.3 and the pinned release, :func:`conformance.targets.kafka_jvm.build_for`).  The list is
cached beside the adapter builds, so bisecting works offline once it has been fetched.

Bisection assumes one change between the two ends, as ``git bisect`` does: the verdict at ``--from``
holds up to some release and the verdict there differs from then on.  It replays the case on
about log2(n) releases; a release whose adapter cannot run (a failed build, a dead JVM) is skipped
and named, as ``git bisect skip`` does, and a verdict that is neither end's (a third behaviour in
between) is reported as such, since it breaks the assumption.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Callable

import attrs

from conformance import regressions
from conformance.matrix import target_of
from conformance.targets.kafka_jvm import BUILD_CACHE, PINNED, RELEASE, KafkaTargetError, NoAdapter, build_for

METADATA = tuple(
    f"https://repo.maven.apache.org/maven2/org/apache/kafka/{artifact}/maven-metadata.xml"
    for artifact in ("kafka_2.13", "kafka_2.12")
)
CACHE = BUILD_CACHE.parent / "kafka-releases.json"
FETCH_TIMEOUT_S = 20


class BisectError(ValueError):
    """Bad ends, no releases between them, or no list of releases to be had."""


def version_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def has_adapter(release: str) -> bool:
    """Whether an adapter runs ``release`` (without building it): the lines 0.11–4.3 and the pinned
    one (0.10.2 and before read no v2 batch: refused by the kafka target)."""
    line = version_key(release)[:2]
    return release == PINNED or (0, 11) <= line <= (4, 3)


def published(fetch: Callable[[str], bytes] | None = None) -> list[str]:
    """Every release on Maven Central, oldest first; the cached list when Maven Central cannot be
    reached (BisectError when there is none)."""
    fetch = fetch or _fetch
    found: set[str] = set()
    try:
        for url in METADATA:
            found |= set(re.findall(rb"<version>(\d+\.\d+\.\d+(?:\.\d+)?)</version>", fetch(url)))
    except OSError as e:
        return _cached(f"Maven Central could not be reached ({e})")
    releases = sorted((v.decode() for v in found), key=version_key)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(releases))
    return releases


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as response:  # noqa: S310 — a fixed https URL
        return response.read()


def _cached(why: str) -> list[str]:
    try:
        return json.loads(CACHE.read_text())
    except (OSError, ValueError):
        raise BisectError(f"{why}, and no list of releases is cached at {CACHE}") from None


def between(releases: list[str], first: str, last: str) -> list[str]:
    """The releases from ``first`` to ``last`` (both included) that an adapter runs."""
    for end in (first, last):
        if not RELEASE.fullmatch(end):
            raise BisectError(f"{end!r} is not a Kafka release (MAJOR.MINOR.PATCH)")
        if end not in releases:
            raise BisectError(f"{end} is not a release on Maven Central")
        if not has_adapter(end):
            raise BisectError(f"{end}: no adapter runs it (0.11–4.3 and {PINNED}; docs/kafka-target.md)")
    if version_key(first) >= version_key(last):
        raise BisectError(f"--from {first} must be an older release than --to {last}")
    lo, hi = version_key(first), version_key(last)
    return [r for r in releases if lo <= version_key(r) <= hi and has_adapter(r)]


@attrs.define
class Bisection:
    case: str
    releases: list[str]  # the candidates, oldest first
    verdicts: dict[str, str] = attrs.Factory(dict)  # release -> verdict, for each release replayed
    witnesses: dict[str, str] = attrs.Factory(dict)
    skipped: dict[str, str] = attrs.Factory(dict)  # release -> why it could not run
    last_same: str | None = None  # the newest release with --from's verdict
    first_changed: str | None = None  # the oldest release after it with --to's verdict
    third: list[str] = attrs.Factory(list)  # releases with a verdict neither end has

    def to_json(self) -> dict:
        return attrs.asdict(self)


Judge = Callable[[str], tuple[str, str | None]]  # release -> (verdict, witness)


def bisect(case_name: str, releases: list[str], judge: Judge) -> Bisection:
    """Binary search of ``releases`` for the first whose verdict differs from the first one's."""
    result = Bisection(case_name, releases)
    start, end = _verdict(result, releases[0], judge), _verdict(result, releases[-1], judge)
    if start is None or end is None:
        raise BisectError(f"the ends could not be judged: {result.skipped}")
    if start == end:
        return result  # no change between the ends: nothing to find
    lo, hi = 0, len(releases) - 1  # verdict(lo) == start, verdict(hi) != start
    while hi - lo > 1:
        mid = _runnable_middle(result, releases, lo, hi, judge)
        if mid is None:
            break  # every release between was skipped: the change lies somewhere in (lo, hi]
        if result.verdicts[releases[mid]] == start:
            lo = mid
        else:
            if result.verdicts[releases[mid]] != end:
                result.third.append(releases[mid])
            hi = mid
    result.last_same, result.first_changed = releases[lo], releases[hi]
    return result


def _runnable_middle(result: Bisection, releases: list[str], lo: int, hi: int, judge: Judge) -> int | None:
    """The release nearest the middle of (lo, hi) that can be judged; None when none can."""
    middle = (lo + hi) // 2
    for i in sorted(range(lo + 1, hi), key=lambda i: (abs(i - middle), i)):
        if _verdict(result, releases[i], judge) is not None:
            return i
    return None


def _verdict(result: Bisection, release: str, judge: Judge) -> str | None:
    if release in result.verdicts:
        return result.verdicts[release]
    try:
        verdict, witness = judge(release)
    except KafkaTargetError as e:  # a harness error says nothing of the release: skip it
        result.skipped[release] = str(e)
        return None
    result.verdicts[release] = verdict
    if witness:
        result.witnesses[release] = witness
    return verdict


def replay_on(case: regressions.Case) -> Judge:
    """The judge of a corpus case: its replay on each release's adapter."""

    def judge(release: str) -> tuple[str, str | None]:
        build_for(release)  # the adapter first: its build's failure is the harness error it is
        violation = regressions.replay(case, target_of(release))
        return regressions.verdict_of(violation), None if violation is None else str(violation)

    return judge


def lines(b: Bisection) -> list[str]:
    """The report as text: each release replayed, then the answer."""
    out = [f"{r}: {b.verdicts[r]}" for r in b.releases if r in b.verdicts]
    out += [f"{r}: skipped ({why})" for r, why in b.skipped.items()]
    if b.first_changed is None:
        out.append(f"{b.case}: {b.verdicts[b.releases[0]]} on every release from {b.releases[0]} to {b.releases[-1]}")
        return out
    out.append(
        f"{b.case}: {b.verdicts[b.last_same]} up to {b.last_same}, "
        f"{b.verdicts[b.first_changed]} from {b.first_changed}"
        + (f" (releases between them skipped: {', '.join(_gap(b))})" if _gap(b) else "")
    )
    if b.third:
        out.append(f"a third verdict between the ends, on {', '.join(b.third)}: more than one change, bisect with narrower ends")
    return out


def _gap(b: Bisection) -> list[str]:
    i, j = b.releases.index(b.last_same), b.releases.index(b.first_changed)
    return b.releases[i + 1 : j]


def case_named(path: str) -> regressions.Case:
    """The corpus case at ``path``: its JSON file, or a folder holding one (a Kafka finding's)."""
    wanted = os.path.realpath(os.path.join(path, "scenario.json") if os.path.isdir(path) else path)
    for case in regressions.cases():
        if os.path.realpath(case.path) == wanted:
            return case
    raise BisectError(f"{path}: not a case of the corpus (corpora/)")


__all__ = ["Bisection", "BisectError", "NoAdapter", "between", "bisect", "case_named", "lines", "published", "replay_on"]
