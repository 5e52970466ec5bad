"""``conforms``: with two or more targets, every step gives the same result, the same logical log
(log start and end offsets, recovery point, segments, leader epochs, producer state) and the same files — index
files too when they are settled (right after a shutdown or an open, when every index is trimmed
or resized)."""

from __future__ import annotations

import functools
import re

from conformance import kafkas_own, releases
from conformance.index_files import is_index_file
from conformance.properties import CONFORMS, Observation, tainted
from conformance.targets import without_producers
from conformance.verdicts import describe, first_difference
from model.checkpoints import CheckpointError, parse_offsets, render_offsets
from model.producer_state import SUFFIX as SNAPSHOT

OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint")
NOT_SETTLED = ("-delete", "-stray")  # partition dirs whose log no shutdown closes


def judge(obs: Observation):
    """Each target against the first: result, then state, then files; stops at the first difference."""
    step = obs.step
    # an open a running broker refused loaded nothing: its lazily created indexes are as unsettled
    # as before it (corpora/found/conforms-4cc52035c1)
    refused = step.loads and any(
        (r or {}).get("error") == "AlreadyRunning" for r in obs.results.values()
    )
    # a failed startup leaves the loads' indexes as a process death does (preallocated, untrimmed)
    failed = step.loads and any((r or {}).get("started") is False for r in obs.results.values())
    settled = (step.shuts_down or step.loads) and not refused and not failed
    a = obs.targets[0] if obs.targets else None
    for b in obs.targets[1:]:
        witness = _difference(obs, a, b, settled)
        yield CONFORMS, witness
        if witness:
            return


def _difference(obs: Observation, a, b, settled: bool) -> str | None:
    step = obs.step
    ra, rb = comparable(obs.results[a.name]), comparable(obs.results[b.name])
    if ra != rb:
        where = first_difference(ra, rb)
        return f"{describe(step)}: {a.name} vs {b.name} result {where}{_kafkas_load_error(obs, (a, b), where)}"
    sa, sb = a.state(), b.state()
    producers = a.compares_producer_state and b.compares_producer_state
    if not producers and sa.get("partitions") is not None and sb.get("partitions") is not None:
        sa, sb = ({**s, "partitions": without_producers(s["partitions"])} for s in (sa, sb))
    if sa != sb:
        return f"after {describe(step)}: log state {first_difference(sa, sb)}"
    fa = comparable_files(a.files(settled), settled, obs.unloadable, obs.corrupted, obs.faulted)
    fb = comparable_files(b.files(settled), settled, obs.unloadable, obs.corrupted, obs.faulted)
    if not producers:
        fa, fb = ({p: d for p, d in f.items() if SNAPSHOT not in p.rsplit("/", 1)[-1]} for f in (fa, fb))
    fa, fb = (releases.comparable_files(f, a.differences | b.differences) for f in (fa, fb))
    if fa == fb:
        return None
    diff = sorted(set(fa) ^ set(fb)) or sorted(p for p in fa if fa[p] != fb[p])
    p = diff[0]
    if p not in fa or p not in fb:
        detail = f"only in {a.name if p in fa else b.name}"
    else:
        detail = f"{len(fa[p])} bytes vs {len(fb[p])} bytes, first difference at byte {_first_byte_diff(fa[p], fb[p])}"
    return f"after {describe(step)}: file {p}: {detail}"


LOAD_ERROR = re.compile(r"/loaded\[(\d+)\]/error: ")


def _kafkas_load_error(obs: Observation, pair, where: str) -> str:
    """When the pair differs in whether a partition's load failed, Kafka's own message for it (what
    the operator saw: it names the file, KAFKA-3955's index), quoted after the witness.  The texts
    are compared by presence only (:func:`comparable`); a Kafka target's is the fact shown."""
    m = LOAD_ERROR.match(where)
    if m is None:
        return ""
    for t in pair:
        loaded = (obs.results[t.name] or {}).get("loaded", ())
        i = int(m[1])
        if t.name.startswith("kafka") and i < len(loaded) and loaded[i].get("error"):
            return f" ({t.name}: {loaded[i]['error']})"
    return ""


def comparable(result: dict) -> dict:
    """A step's result as compared: load errors by whether there is one (their texts name files
    the same way but are worded per implementation)."""
    if "loaded" in result:
        return {**result, "loaded": [{**x, "error": bool(x["error"])} for x in result["loaded"]]}
    return result


def comparable_files(
    files: dict[str, bytes], settled: bool, unloadable=(), corrupted=(), faulted: bool = False
) -> dict[str, bytes]:
    """The files as compared.  Index files only when settled: in between, an index exists only once
    materialised and its file keeps preallocated slots.  Kafka's own (:mod:`conformance.kafkas_own`):
    ``failed-partition-half-recovered``, ``corrupted-index-kept``, ``zero-filled-index``."""
    if not settled:
        files = {p: d for p, d in files.items() if not is_index_file(p)}
    else:
        # a log queued for deletion (a -delete dir) or set aside (a -stray dir) is never settled: no
        # shutdown closes it, so its indexes are as a live log's in between (a -delete one's exist
        # only once materialised; a -stray one's active pair keeps the size its load resized it to)
        files = {
            p: d
            for p, d in files.items()
            if not (is_index_file(p) and (p.endswith(".deleted") or p.rsplit("/", 1)[0].endswith(NOT_SETTLED)))
        }
    if unloadable and kafkas_own.applies("failed-partition-half-recovered"):
        files = {p: d for p, d in files.items() if not (p.count("/") >= 2 and p.split("/")[1] in unloadable)}
    if corrupted and kafkas_own.applies("corrupted-index-kept"):
        files = {p: d for p, d in files.items() if not (is_index_file(p) and tainted(p.rsplit("/", 1)[0], corrupted))}
    if faulted and kafkas_own.applies("zero-filled-index"):
        files = {p: _without_zero_slots(p, d) if is_index_file(p) else d for p, d in files.items()}
    return {p: in_sorted_order(d) if p.rsplit("/", 1)[-1] in OFFSET_CHECKPOINTS else d for p, d in files.items()}


@functools.lru_cache(maxsize=1024)
def in_sorted_order(data: bytes) -> bytes:
    """An offset checkpoint with its entries sorted: Kafka writes its map's order (a HashMap's),
    which carries no meaning.  Anything but a reordering stays as is.  Cached: every step compares
    the same few checkpoints on every target."""
    try:
        rendered = render_offsets(parse_offsets(data)).encode()
    except CheckpointError:
        return data
    old, new = data.splitlines(), rendered.splitlines()
    return rendered if old[:2] == new[:2] and sorted(old[2:]) == new[2:] and data.endswith(b"\n") else data


def _without_zero_slots(path: str, data: bytes) -> bytes:
    """An index file of two or more slots, all zero, read as empty: no index holds two all-zero
    entries (offsets and timestamps increase), so this is padding.  One zero slot can be a real
    entry (the base offset at position 0) and is compared, as is everything else."""
    size = 12 if ".timeindex" in path else 8
    # compared with a calloc'd run of zeros (memcmp): a preallocated index is megabytes, and
    # bytes.count is five times slower, any() a thousand
    return b"" if len(data) >= 2 * size and len(data) % size == 0 and data == bytes(len(data)) else data


def _first_byte_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
