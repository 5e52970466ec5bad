"""``index-agrees``: every index entry of every live segment names the batch it points at, and a
lookup through the index equals a scan (what ``kafka-dump-log --verify-index-only`` checks)."""

from __future__ import annotations

from conformance import kafkas_own
from conformance.properties import INDEX_AGREES, Observation, tainted
from model.file_records import iterate_file


def judge(obs: Observation):
    """Per target, every live segment's entries (:meth:`index_entries`) against its bytes."""
    for t in obs.targets:
        if obs.faulted and t.trusts_its_index_files and kafkas_own.applies("index-trusted-after-a-fault"):
            continue
        yield INDEX_AGREES, _first_problem(t, obs.corrupted)


def _first_problem(target, corrupted) -> str | None:
    for key, (offsets, times, log, active, end) in sorted(target.index_entries().items()):
        if tainted(key.rsplit("/", 1)[0], corrupted) and kafkas_own.applies("corrupted-index-kept"):
            continue
        problem = index_problem(offsets, times, log, active, int(key.rsplit("/", 1)[-1]), end)
        if problem:
            return f"{target.name} segment {key}: {problem}"
    return None


def index_problem(
    offset_entries, time_entries, log: bytes, active: bool, base: int | None = None, end: int | None = None
) -> str | None:
    """None if every entry is right about ``log`` (a scan is the truth), else the first problem.

    ``end`` is the segment's end offset (the next segment's base, or the log end offset): an entry
    past the last batch but below it is Kafka's own.  Kafka's own (:mod:`conformance.kafkas_own`):
    ``cleaned-entry-below-kept-offset``, ``truncation-forgets-max-timestamp``,
    ``overflowed-legacy-entry``.  Lookups stay right in each: an entry is a lower bound on its
    offset's position.

    Not checked: that an inactive segment's last time entry carries its max timestamp (§9.1.4).
    Kafka itself breaks that: after a restart ``truncateTo`` truncates the time index before it
    reloads the max timestamp from it (§4.7 steps 2 and 7), so the max entry is gone for good and
    time retention falls back to the file's mtime."""
    if base is not None and kafkas_own.applies("overflowed-legacy-entry"):
        offset_entries = [e for e in offset_entries if e[0] >= base]
        time_entries = [e for e in time_entries if e[1] >= base]
    batches = [(b.position, b.header()) for b in iterate_file(log).batches]
    starts = _lowest_offsets(batches, base)
    last_offset = batches[-1][1].last_offset if batches else None
    cut_chunk = kafkas_own.applies("cleaned-entry-below-kept-offset")
    # the largest offset an entry may name: below the segment's end, past its last batch (Kafka's own)
    past = last_offset if end is None or last_offset is None or not cut_chunk else end - 1
    # the offset after the last batch: what the segment's end falls back to once a load forgets a cut
    after = last_offset + 1 if last_offset is not None else base
    for i, (key, position) in enumerate(offset_entries):
        # at the cut (the log's end), naming an offset the log does not hold up to the segment's end:
        # a truncation inside the batch it names
        if (
            cut_chunk
            and position == len(log)
            and end is not None
            and (last_offset is None or last_offset < key)
            and key <= max(end - 1, after if after is not None else end - 1)
        ):
            continue
        if i and key <= offset_entries[i - 1][0]:
            return f"offset index entry {i} ({key}, {position}) does not increase on entry {i - 1}"
        if position not in starts:
            return f"offset index entry {i} ({key}, {position}) does not point at a batch start"
        if starts[position] > key or past is None or key > past:
            return f"offset index entry {i} ({key}, {position}) names an offset its batch does not hold"
    forgotten = kafkas_own.applies("truncation-forgets-max-timestamp")
    running, j = -1, 0
    for i, (ts, offset) in enumerate(time_entries):
        if past is None or offset > past:
            return f"time index entry {i} ({ts}, {offset}) is past the end of the log"
        while j < len(batches) and batches[j][1].last_offset < offset:
            if i or not forgotten:  # before the first entry: what a truncation may have made Kafka forget
                running = max(running, batches[j][1].max_timestamp)
            j += 1
        if running >= ts:
            return f"time index entry {i} ({ts}, {offset}): an earlier batch already reached {running}"
    return None


def _lowest_offsets(batches, base: int | None) -> dict[int, int]:
    """Per batch position, the lowest offset an entry may name there: a v2 batch's base offset; a
    legacy message set's offsets after the previous batch's last one, up to its own (a compressed
    wrapper's inner messages, which a zero slot or a split's entry may name: still a lower bound on
    their position)."""
    out, previous = {}, None
    for position, h in batches:
        if h.magic >= 2:
            out[position] = h.offset
        elif previous is not None:
            out[position] = min(previous + 1, h.last_offset)
        else:
            out[position] = min(base, h.last_offset) if base is not None else h.last_offset
        previous = h.last_offset
    return out
