"""The crash machine's fault strategies: legacy segments copied in, crash images, crash points, and
which file damage lands in and how (spec §5, §6.5, §9.3).  Files are read through the model's
parsers (model.checkpoints, model.indexes, model.file_records); every probability is a row of
:mod:`conformance.weights`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance import faults as fault_steps
from conformance import scenario as sc
from conformance.crash_images import FAMILIES, FILLS, UNITS, Fault
from conformance.strategies import INT32_MAX, batch_ends, damage_site
from conformance.weights import choices, coin, weighted
from model.checkpoints import CheckpointError, parse_epochs, parse_offsets
from model.file_records import iterate_file
from model.indexes import file_entries

LEGACY_TOPIC = "legacy"  # inject_legacy_segment's partitions: never created by a create step
TURNS = ("rename", "unlink", "truncate", "create", "fsync_dir")  # a step's operations worth crashing at


@st.composite
def legacy_segments(draw, partition: int):
    """An ``inject_legacy_segment`` step (spec §7.9): 1–6 v0/v1 messages, plain or in compressed
    wrappers, whose offset gaps are small or land around 2^31 so that a segment holds relative
    offsets just below, at or above the largest an index can store (KAFKA-4451, KAFKA-5413)."""
    magic = draw(st.sampled_from([0, 1]), label="magic")
    codec = draw(st.sampled_from(choices("legacy segment: codec")), label="codec")
    indexes = coin(draw, "legacy segment: indexes copied with it", label="indexes")
    first = draw(st.sampled_from(choices("legacy segment: first offset")), label="first offset")
    messages, offset = [], first - 1
    gaps = {
        "1 to 3": st.integers(1, 3),
        "2^31-1 give or take 3": st.integers(INT32_MAX - 3, INT32_MAX + 3),
        "2^30 give or take 2": st.integers(INT32_MAX // 2 - 2, INT32_MAX // 2 + 2),
    }
    for _ in range(draw(st.integers(1, 6), label="messages")):
        gap = draw(weighted("legacy segment: offset gap", gaps), label="gap")
        records = draw(st.integers(1, 3), label="records") if codec != "none" else 1
        offset += gap + records - 1
        messages.append(fault_steps.LegacyMessage(offset, records))
    # a file base below the first offset (what a cleaned segment has) only with its indexes: without
    # them a clean load splits a segment the map does not hold yet and leaves the original in place
    # next to the split ones (docs/swap-files.md, "a split at a clean load")
    belows = st.sampled_from(choices("legacy segment: file base below its first offset"))
    below = draw(belows, label="base below first") if indexes else 0
    base = max(0, messages[0].first - below)
    return fault_steps.InjectLegacySegment(
        LEGACY_TOPIC, partition, 0, base, tuple(messages), magic, codec, indexes, 1_600_000_000_000
    )


def faults(families, pending: int, marks: tuple[int, ...] = (), cuts: tuple[int, ...] = (), aims: tuple[int, ...] = ()):
    """A crash image description from ``families``, its op numbers around ``pending``.  ``marks``
    are the pending operations that change a name or an extent (create, rename, unlink, truncate),
    where ordering bugs live: op numbers fall on or right after one of them, and a reordering or a
    metadata loss may lose exactly one of them (ALICE's omit-one).  ``cuts``, those of the marks that
    shorten a ``.log``: a truncation's cut, which Kafka never fsyncs (§4.7) — a loss of exactly one
    of them is an option of its own, beside the families when they include reorderings.  ``aims``,
    the pending writes of producer-state files (``.snapshot``, ``.txnindex``): a write torn, read as
    zeros or lost there is a snapshot or transaction index the next load must cope with (docs/producer-state.md);
    generic op numbers tore 5 snapshots and no ``.txnindex`` in about 2,500 crashes."""
    n = max(pending, 1) + 8
    ops = st.integers(0, n)
    if marks or aims:
        at = {"anywhere": ops}
        if marks:
            at["at a name or extent change"] = st.sampled_from(marks)
        if aims:
            at["at a producer-state file's write"] = st.sampled_from(aims)
        ops = weighted("crash image: op number", at)
        around = st.sampled_from(marks).flatmap(lambda i: st.sampled_from([i, i + 1]))
        keep = weighted(
            "crash image: prefix kept",
            {"up to a name or extent change or one past it": around, "anywhere": st.integers(0, n)},
        )
    else:
        keep = ops
    lost = {"up to four operations": st.lists(ops, max_size=4).map(lambda xs: tuple(sorted(set(xs))))}
    if marks:
        lost["one name or extent change"] = st.sampled_from(marks).map(lambda i: (i,))
    if cuts:
        lost["one pending .log cut"] = st.sampled_from(cuts).map(lambda i: (i,))
    if aims:
        lost["one producer-state file's write"] = st.sampled_from(aims).map(lambda i: (i,))
    lose = weighted("crash image: operations lost", lost)
    by_family = {
        "process": lambda: st.just(Fault("process")),
        "prefix": lambda: st.builds(Fault, st.just("prefix"), keep=keep),
        "reorder": lambda: st.builds(Fault, st.just("reorder"), lose=lose),
        "torn": lambda: st.builds(
            Fault,
            st.just("torn"),
            op=ops,
            unit=st.sampled_from(UNITS),
            cut=st.integers(0, 8),
            fill=st.sampled_from(FILLS),
            seed=st.integers(0, 7),
        ),
        "size_ahead": lambda: st.builds(Fault, st.just("size_ahead"), op=ops),
        "metadata": lambda: st.builds(Fault, st.just("metadata"), lose=lose, data=st.booleans()),
    }
    options = {f: by_family[f] for f in FAMILIES if f in families}
    if cuts and "reorder" in families:
        one_cut = st.sampled_from(cuts).map(lambda i: (i,))
        options["a pending .log cut lost alone"] = lambda: st.builds(Fault, st.just("reorder"), lose=one_cut)
    return weighted("crash image: family", options)


def crash_points(counted: list[str] | None = None):
    """The storage operation a fault interrupts.  ``counted``, when a dry run of the step gave it,
    lists the step's operations: then the crash falls anywhere in the step, or on or right after
    one of its renames, unlinks, truncations, creations or directory syncs — a split at load or a
    cleaning round renames .cleaned → .swap → final around operation 50 to 150, and each rename is
    a different crash state (§5.9, ALICE).  Without a dry run: most steps make fewer than 30
    operations, a split or a round up to 160."""
    if not counted:
        return weighted(
            "crash point: without a dry run",
            {"operations 0 to 30": st.integers(0, 30), "operations 31 to 160": st.integers(31, 160)},
        )

    def around(kinds):
        ops = [i for i, what in enumerate(counted) if what in kinds]
        return st.sampled_from(ops).flatmap(lambda i: st.sampled_from([i, i + 1])) if ops else None

    options = {
        "anywhere in it": st.integers(0, len(counted)),
        "on or after a name or extent change": around(TURNS),
        "on or after a rename": around(("rename",)),  # a rename is a turn too: renames have two options
    }
    return weighted("crash point: in a step with a dry run", {k: v for k, v in options.items() if v is not None})


def is_text_checkpoint(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "." not in name or name.endswith("checkpoint")


def checkpoint_entries(parse, content: bytes) -> list:
    """The entries of a checkpoint file that parse, each line past the version and the count read
    by ``parse`` (model.checkpoints) as a checkpoint of that one entry: a damaged line drops only
    itself.  (Kafka's read drops the whole file on any bad line, §6.2; this is where damage
    lands, not what a load reads.)"""
    out = []
    for line in content.decode("ascii", "replace").splitlines()[2:]:
        try:
            entries = parse(f"0\n1\n{line}\n")
        except CheckpointError:
            continue
        out += entries.items() if isinstance(entries, dict) else entries
    return out


def recovery_points(files: dict[str, bytes]) -> dict[str, int]:
    """Partition directory → the recovery point its data directory's checkpoint holds (what the
    next unclean load recovers from, §5.6), for the entries that parse."""
    out = {}
    for path, content in files.items():
        data_dir, _, name = path.rpartition("/")
        if name == "recovery-point-offset-checkpoint":
            for (topic, partition), offset in checkpoint_entries(parse_offsets, content):
                out[f"{data_dir}/{topic}-{partition}"] = offset
    return out


def recovered_logs(logs: list[str], files: dict[str, bytes]) -> list[str]:
    """The ``.log`` files an unclean load would recover: in each partition, the segment holding the
    recovery point and every one after it (§5.6 step 1a) — the only ones whose damage a recovery
    reads (the one torn in the middle of the unflushed ones deletes those after it, §5.6 step 1b)."""
    points, by_dir = recovery_points(files), {}
    for p in logs:
        by_dir.setdefault(p.rsplit("/", 1)[0], []).append(p)
    out = []
    for d, paths in by_dir.items():
        names = ((p.rsplit("/", 1)[1].split(".")[0], p) for p in paths)
        bases = sorted((int(n), p) for n, p in names if n.isdigit())  # not a negative base's (§5.5)
        point = points.get(d, 0)
        floor = max((b for b, _ in bases if b <= point), default=None)
        out += [p for b, p in bases if floor is None or b >= floor]
    return sorted(out)


def indexed_batches(files: dict[str, bytes], path: str) -> tuple[int, ...]:
    """Positions in the ``.log`` at ``path`` of the batches its indexes' entries name: the offset
    index's positions, the batch holding each time index entry's offset (§3.1, §3.2).  Entries are
    read as Kafka lists them, up to the first zero slot (preallocated padding): in an offset index
    past the first slot (relative offset 0 at position 0 is an entry), in a time index from the
    first."""
    stem, content = path[: -len("log")], files[path]
    try:
        base = int(path.rsplit("/", 1)[1].split(".")[0])
    except ValueError:
        return ()
    positions = set()
    for i, (relative, position) in enumerate(file_entries(stem + "index", files.get(stem + "index", b""))):
        if i and relative == 0 and position == 0:
            break
        positions.add(position)
    named = set()
    for timestamp, relative in file_entries(stem + "timeindex", files.get(stem + "timeindex", b"")):
        if timestamp == 0 and relative == 0:
            break
        named.add(base + relative)
    out = []
    for b in iterate_file(content, validate=False).batches:
        try:
            first, last = b.header().offset, b.header().last_offset
        except Exception:  # noqa: BLE001 — a batch too damaged to name offsets: named by position only
            first, last = 0, -1
        if b.position in positions or any(first <= o <= last for o in named):
            out.append(b.position)
    return tuple(out)


def damaged_files(files: dict[str, bytes]):
    """The file damage lands in, by kind (the weights of "damaged file"): an inactive segment's .log
    that an unclean load recovers; a partition's active segment's .log (every load reads it: a clean
    one its tail, §4.5 rule 3, an unclean one all of it, §5.6); the active segment's .index or
    .timeindex (what a clean load trusts unread, KAFKA-7283: the offset index's last entry starts
    the tail it scans, the time index's last entry is the max timestamp, a full one rolls the next
    append, §4.3 rule 4); the other segments' indexes (what no load proves before a lookup or a
    retention uses them, KAFKA-10207); a text checkpoint (recovery point, log start, leader
    epochs...); a partition's leader-epoch checkpoint; an injected legacy segment's .log; a
    producer snapshot or ``.txnindex``; any kind of file (.index, .timeindex, a snapshot...), each
    kind as likely as the others."""
    by_kind: dict[str, list[str]] = {}
    for p in files:
        by_kind.setdefault(p.rsplit("/", 1)[-1].split(".", 1)[-1], []).append(p)
    kinds = sorted(by_kind, key=lambda k: (k != "log", k != "index", k != "timeindex", k))
    texts = sorted(p for p in files if is_text_checkpoint(p))
    logs = sorted(by_kind.get("log", ()))
    # each partition's active segment: what every load reads; the others a clean load never reads
    active = sorted({p.rsplit("/", 1)[0]: p for p in logs}.values())
    beside = (p[: -len("log")] + suffix for p in active for suffix in ("index", "timeindex"))
    active_indexes = sorted(p for p in beside if p in files)
    # of the other segments, those an unclean load recovers (at and past the recovery point): damage
    # below it is read by no load, and a torn segment in the middle of the unflushed ones is what
    # deletes those after it (§5.6 step 1b); the active one when there is no other
    recovered = recovered_logs(logs, files)
    recovered = [p for p in recovered if p not in active] or recovered or logs
    # the other segments' indexes: a load that does not recover a segment (a clean one, or an
    # unclean one below the recovery point) leaves them unproven — Kafka trusts the final time entry
    # as the segment's max timestamp for retention, and the entries for lookups (KAFKA-10207, §7.8)
    inactive_indexes = sorted(
        p for p in files if p.endswith((".index", ".timeindex")) and p not in active_indexes
        and p.rsplit(".", 1)[0] + ".log" in files
    )  # fmt: skip
    # a partition's own epoch checkpoint (the leader-epoch cache a load rebuilds from it, §6.5), one
    # with two entries or more when there is one: a single entry cannot go out of order
    epochs = [p for p in texts if p.count("/") == 2]
    several = [p for p in epochs if len(checkpoint_entries(parse_epochs, files[p])) >= 2]
    # a legacy segment copied in while the broker was down (KAFKA-6264's upgrade path): without its
    # indexes every load recovers it, a clean one too, so its damage — a message offset's sign bit —
    # reaches a split at load whichever way the broker went down (§5.5)
    legacy = [p for p in logs if p.split("/")[1].startswith(f"{LEGACY_TOPIC}-")]
    among = {
        "a recovered .log": recovered,
        "an active .log": active,
        "an active segment's index": active_indexes,
        "another segment's index": inactive_indexes,
        "a text checkpoint": texts,
        "a leader-epoch checkpoint": several or epochs,
        "a legacy .log": legacy,
        # a producer snapshot or a transaction index: the load deletes a snapshot that does not
        # read and takes the next older one (rule 35); segment recovery rebuilds a .txnindex
        # (rule 57) — but only of a segment it recovers
        "a producer-state file": sorted(p for p in files if p.endswith((".snapshot", ".txnindex"))),
    }
    # (a function builds each option's strategy: one of weight 2 is two strategies)
    options = {k: (lambda paths=paths: st.sampled_from(paths)) for k, paths in among.items() if paths}
    options["any file of any kind"] = st.sampled_from(kinds).flatmap(lambda k: st.sampled_from(by_kind[k]))
    return weighted("damaged file", options)


@st.composite
def field_changes(draw, path: str, content: bytes, text: bool) -> tuple[int, int]:
    """One field of a file changed by one bit, as a grammar-aware fuzzer mutates: (offset, bit).

    * a text checkpoint: a digit of an entry (past the version and count lines) with one of its
      low three bits flipped, so it stays a digit and the file still parses — a recovery point or
      log start moved, a leader epoch no longer above the one before it (§6.5, LeaderEpochFileCache's
      constructor assigns entry by entry);
    * a .log (a legacy segment copied in): a batch's base offset, outside the CRC, its sign bit
      (bit 7 of the batch's first byte) or the bit below it flipped — negative, or 2^62 up past the
      segment's relative range: a recovery keeps the batch and splits the segment there, a segment
      named by a negative offset (§5.5, LogFileUtils.filenamePrefixFromOffset)."""
    if text:
        digits = [i for i, c in enumerate(content) if 0x30 <= c <= 0x39]
        head = content.split(b"\n", 2)
        entries = [i for i in digits if len(head) == 3 and i >= len(head[0]) + len(head[1]) + 2]
        sites, bits = entries or digits or [0], st.integers(0, 2)
    else:
        # not the last batch's when there are others: a negative next offset fails hasOverflow
        # (§4.5 rule 4) and the load refuses the split, which the generic damage reaches too
        starts = batch_ends(content)[:-1] or [0]
        sites, bits = starts[:-1] or starts, st.sampled_from([7, 6])
    return draw(st.sampled_from(sites), label="field"), draw(bits, label="bit")


def damage(data, path: str, files: dict[str, bytes], kind: str, text: bool) -> tuple[str, int, int, int]:
    """Damage of ``kind`` (in a text checkpoint, ``kind`` or a bit flip), its length, where and its
    seed."""
    content = files[path]
    if text:
        kind = data.draw(
            weighted(
                "damage: a text checkpoint's damage",
                {"a bit flip": st.just("bitflip"), "the drawn kind": st.just(kind)},
            ),
            label="text damage",
        )
    named = indexed_batches(files, path) if path.endswith(".log") else ()
    offset = data.draw(damage_site(path, content, kind, text, named), label="offset")
    # 8: a whole int64 field replaced (a base offset junk from its sign byte on: outside the CRC, a
    # recovery keeps the batch and splits its segment at the junk offset, §5.5)
    lengths = {"1, 4, 8, 61 or 512 bytes": st.sampled_from([1, 4, 8, 61, 512])}
    if text:
        lengths["1 byte"] = st.just(1)
    length = data.draw(weighted("damage: length", lengths), label="length")
    # the seed picks the junk, or the bit a bitflip flips (as in field_changes)
    favoured = [0, 1, 2] if text else [6, 7]
    seed = data.draw(
        weighted("damage: seed", {"any": st.integers(0, 255), "a favoured bit": st.sampled_from(favoured)}),
        label="seed",
    )
    return kind, length, offset, seed
