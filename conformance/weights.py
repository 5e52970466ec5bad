"""Every probability and weight the state machines and their strategies draw with, in one table: a
name, the value, and the rule it exercises (DESIGN.md, "Style to follow").  The machines read the
values by name, through the helpers at the end.

Two kinds of value:

* a chance, ``Fraction(k, n)``: a step taken with probability k/n.  :func:`chance` draws it as an
  integer in [0, n) with the less likely outcome on the lowest values (where Hypothesis shrinks to);
  :func:`coin` draws a chance of 1/2 as a boolean.
* weights, ``{option: weight}``: one option chosen, each as likely as its weight, in this order —
  :func:`choices` for a ``sampled_from`` of the options themselves, :func:`weighted` for a ``one_of``
  of the strategies the caller names by option.

A draw over a field's whole domain (a codec, a flag, a partition, a page size) is uniform and has no
row.  The evidence behind each value — the seeds, the examples to a mutant's first catch — is in
corpora/README.md; a value changed is measured with ``benchmarks/time_to_catch.py`` at the same seeds
(the order and the number of draws are what makes a seed's cases).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import attrs
from hypothesis import strategies as st

from model.compression import GZIP, LZ4, NONE, SNAPPY

INT32_MAX = 2**31 - 1
DAY = 86_400_000


@attrs.frozen
class Weight:
    name: str
    value: Fraction | Mapping
    reason: str


# fmt: off
TABLE = (
    # --- the crash machine: fault strategies (conformance/fault_strategies.py) ----------------------------
    Weight("legacy segment: codec", {"none": 2, "gzip": 1, "snappy": 1, "lz4": 1},
           "a plain message carries its own offset, a wrapper its last record's (§1.8): both kinds split (§5.5)"),
    Weight("legacy segment: first offset", {0: 2, 7: 1, 2**31: 1, 2**32 + 5: 1},
           "relative offsets overflow int32 from a segment at 0 and from one past 2^31 or 2^32 (KAFKA-5413)"),
    Weight("legacy segment: offset gap", {"1 to 3": 1, "2^31-1 give or take 3": 1, "2^30 give or take 2": 1},
           "a last offset just below, at or above the largest relative offset, in one step or two (KAFKA-4451)"),
    Weight("legacy segment: indexes copied with it", Fraction(1, 2),
           "without indexes every load recovers the segment, a clean one too; with them it trusts them (§5.5)"),
    Weight("legacy segment: file base below its first offset", {0: 2, 1: 1, 5: 1},
           "a cleaned segment's file is named below its first batch (§5.9); drawn only with its indexes"),
    Weight("legacy segment: copied in damaged", Fraction(1, 2),
           "a message offset's sign flipped in an overflowing segment splits at a negative offset (§5.5)"),
    Weight("crash image: op number", {"at a name or extent change": 1, "at a producer-state file's write": 1,
                                      "anywhere": 1},
           "ordering bugs live at a pending create, rename, unlink or cut: a truncation's (§4.7, ALICE); a torn"
           " or zeroed snapshot or .txnindex write is a file the next load must refuse or rebuild (docs/producer-state.md)"),
    Weight("crash image: prefix kept", {"up to a name or extent change or one past it": 1, "anywhere": 1},
           "a prefix ending right before or after a rename or a cut is a crash state of its own (ALICE)"),
    Weight("crash image: operations lost",
           {"one pending .log cut": 1, "one name or extent change": 1, "one producer-state file's write": 1,
            "up to four operations": 1},
           "one reordering (ALICE's omit-one): a truncation's unsynced cut or rename lost, the rest kept (§4.7);"
           " a snapshot or .txnindex write lost while later ones stay"),
    Weight("crash image: family", {"a pending .log cut lost alone": 1, "process": 1, "prefix": 1, "reorder": 1,
                                   "torn": 1, "size_ahead": 1, "metadata": 1},
           "each family of the case's swarm; a pending .log cut lost alone: Kafka never fsyncs it (§4.7)"),
    Weight("crash point: in a step with a dry run",
           {"anywhere in it": 1, "on or after a name or extent change": 1, "on or after a rename": 1},
           "each rename of a split or a cleaning round is a crash state the next load resolves (§5.9)"),
    Weight("crash point: without a dry run", {"operations 0 to 30": 1, "operations 31 to 160": 1},
           "most steps make under 30 storage operations; a split or a cleaning round up to 160 (§5.9)"),
    Weight("damaged file",
           {"a recovered .log": 1, "an active .log": 2, "an active segment's index": 1, "another segment's index": 1,
            "a text checkpoint": 1, "a leader-epoch checkpoint": 1, "a legacy .log": 1, "a producer-state file": 1,
            "any file of any kind": 1},
           "what a load reads (§5.6), trusts unread (KAFKA-7283, KAFKA-10207) or parses (§6.5); every load the active;"
           " a snapshot or .txnindex the load refuses or rebuilds"),
    Weight("damage: an index's final entry zeroed", Fraction(1, 2),
           "a preallocated index's padding in its final slot: max timestamp 0, deleted early (KAFKA-10207)"),
    Weight("crash: cut from Kafka's own journal", Fraction(1, 2),
           "with Kafka's I/O captured, half the power losses fall in Kafka's own write, fsync and rename "
           "order (KAFKA-3968: a segment fsynced, its directory never), half in impl's, the model's protocol"),
    Weight("fail_io: on Kafka's own calls", Fraction(1, 2),
           "with Kafka's I/O captured, half the I/O errors fail one of Kafka's own system calls, so its "
           "error path runs (an msync's UncheckedIOException, §6.6), half impl's operation"),
    Weight("damage: one field changed by one bit", Fraction(1, 2),
           "a checkpoint that still parses (epochs out of order, §6.5); a legacy base offset negative (§5.5)"),
    Weight("damage: a text checkpoint's damage", {"a bit flip": 1, "the drawn kind": 1},
           "a flipped bit mostly leaves a checkpoint parsing; a zeroed or junk block seldom does (§6.5)"),
    Weight("damage: length", {"1 byte": 1, "1, 4, 8, 61 or 512 bytes": 1},
           "one character of a text checkpoint: a number changed, the file parses (§6.5); else the list"),
    Weight("damage: seed", {"any": 1, "a favoured bit": 1},
           "bits 6-7 of a .log byte: a base offset's sign (§5.5); bits 0-2 of a digit, still a digit (§6.5)"),
    # --- the crash machine's rules (conformance/crash_machine.py) -----------------------------------------
    Weight("history", {(3, True): 1, (4, True): 1, (2, True): 1, (3, False): 1, (1, False): 1, (0, False): 1},
           "(segments, settled): steps that remove or replace several segments from the first step on"),
    Weight("history: a new leader at an append", Fraction(1, 2),
           "several epochs to put out of order (§6.5), not one per segment: an epoch checkpoint's fsync"),
    Weight("start: compacted", Fraction(1, 2),
           "an interrupted cleaning round leaves .cleaned and .swap files to the next load (§5.2, §5.9)"),
    Weight("truncation: power loss inside it", Fraction(1, 6),
           "its renames of the segments above the target, then its cut (§4.7): each a crash state"),
    Weight("truncation: max-timestamp lookup after it", Fraction(1, 3),
           "a cut of a time index's only entry before its max was loaded leaves (-1, base) (§4.7 rule 7)"),
    Weight("truncation: the follower's catch-up", Fraction(2, 3),
           "a follower fetches after truncating: new batches over the offsets a lost cut brings back (§4.10)"),
    Weight("truncation: catch-up in a new segment", Fraction(1, 2),
           "a roll at the truncation point flushes nothing: the cut stays unsynced under it (§4.7, §4.10)"),
    Weight("truncation: power loss after it", Fraction(1, 3),
           "the window where its renames and its cut are pending: Kafka fsyncs neither (§4.7)"),
    Weight("truncation: power loss after its catch-up", Fraction(1, 2),
           "the cut pending under the new leader's batches (§4.7, §4.10); always while it is still pending"),
    Weight("expire producers: at a boundary", Fraction(2, 3),
           "the producer expiration check after the clock moved to a producer's boundary, a millisecond either"
           " side or on it (isProducerExpired's >=): a check at an arbitrary time almost never lands there"),
    Weight("delete partition", Fraction(1, 4),
           "LogManager.asyncDelete (§2.3 rule 2): a -delete dir's rename and checkpoints, its deletion at a tick past"
           " file.delete.delay.ms, a crash inside either, and the load that finds one (loaded unrecovered, queued)"),
    Weight("set a partition dir aside", Fraction(1, 3),
           "rename_dir while the broker is down (§2.3 rule 2): the next load keys the dir apart, never serving it"
           " (Kafka 4.4.0's LogManager.loadLog), and it stays through ticks, checkpoints and shutdowns"),
    Weight("set aside as", {"future": 1, "stray": 1, "unassigned": 1},
           "a future replica (KIP-113) copied into the other data dir beside its current log, checkpointed and"
           " closed with that dir's logs; or a stray one, renamed in place, loaded whole and then held by nothing;"
           " or one the metadata image no longer assigns here, which the next load renames -stray (KRaft's isStray)"),
    Weight("promotion: power loss inside it", Fraction(1, 2),
           "replaceCurrentWithFutureLog's two renames, the close and the checkpoints: between the renames the next"
           " load finds two current dirs of the partition and the startup fails (IllegalStateException)"),
    Weight("cleaning round: power loss inside it", Fraction(1, 3),
           ".cleaned to .swap, originals to .deleted, .swap to final: crash states (§5.9, KAFKA-12520)"),
    Weight("after open", {"nothing": 1, "follower truncation": 1, "follower catch-up": 1},
           "a restarted replica leads, truncates to the divergence (KIP-101, KIP-279) or fetches at its end"),
    Weight("special timestamp (crash machine)", {-3: 2, -2: 1, -1: 1},
           "-3 loads every segment's lazy max timestamp (§4.1), which a truncation recomputes (§4.7 rule 7)"),
    # --- the log machine (conformance/log_machine.py) -----------------------------------------------------
    Weight("lookup timestamp", {"a special timestamp": 1, "near the clock": 1},
           "-3, -2 and -1 are ListOffsets' own paths: max timestamp, earliest, latest (§4.1)"),
    Weight("append: codec", {"none": 2, "gzip": 1},
           "a compressed batch's records are read by deep iteration only (§1.6)"),
    Weight("records: timestamp lag", {0: 2, 5_000: 1, 3 * DAY: 1, 30 * DAY: 1},
           "current timestamps, and old ones that time retention (§4.8) and time rolls (§4.3) act on"),
    Weight("idempotent append: sequence", {"next": 4, "retry": 2, "gap": 1, "new epoch": 1, "older epoch": 1},
           "in order mostly; a retry is answered with the first one's offsets, a gap and an older epoch are "
           "refused, a new epoch opens at 0 (docs/producer-state.md rules 47-48)"),
    Weight("idempotent append: transactional", {False: 2, True: 1},
           "a transactional producer's batch opens or continues its transaction (docs/producer-state.md rule 53); "
           "a plain one of a producer inside one is refused"),
    Weight("verify transaction: sequence", {"next": 4, "lower": 1, "higher": 1},
           "the producer's next sequence mostly; a lower one moves the entry's lowest sequence down, a higher "
           "one leaves it, so the next batch is refused or taken (KIP-890's lowest sequence)"),
    Weight("verify transaction: epoch bump", {False: 2, True: 1},
           "a client at transaction version 2 is verified with an epoch bump: a producer with no batch must "
           "then start at sequence 0, and a marker at the entry's epoch keeps the entry"),
    Weight("transactional append: guard", {"the producer's": 4, "none": 1, "another handed out": 1, "stale": 1},
           "with verification on, the guard its verification handed out mostly; none, another producer's "
           "and one never handed out since the start are refused outside an open transaction (the ABA case)"),
    Weight("transaction marker", {"current": 6, "fenced coordinator": 1, "older producer epoch": 1},
           "COMMIT and ABORT close transactions and fill the txn index (rules 55-56); a fenced coordinator's and an "
           "older epoch's markers are refused"),
    Weight("transaction marker: version", {0: 2, 2: 1},
           "the classic protocol's markers keep the epoch; KIP-890's version 2 bumps it first and refuses one at it"
           " unless it is a retry (docs/producer-state.md rule 55; drawn where every target takes a version, 4.2 on)"),
    Weight("read: isolation", {"read_uncommitted": 3, "read_committed": 1},
           "read_committed stops at the last stable offset and answers the aborted transactions (rule 60)"),
    Weight("follower append: magic", {2: 6, 1: 1, 0: 1},
           "a leader's fetch may carry legacy message sets: appended as they are, they clear the leader-epoch cache "
           "and roll by KAFKA-6264's guess (corpora/log/legacy-follower-appends.json)"),
    Weight("follower append: stamped by a LogAppendTime leader", {False: 3, True: 1},
           "a leader under LogAppendTime stamps v2 batches and magic 1 messages and wrappers, whose records then "
           "read as the stamp (corpora/log/log-append-time-on-a-followers-legacy-messages.json)"),
    Weight("follower append: offset gap", {0: 2, 1: 1, 40: 1},
           "a follower's batches continue the log, or leave the gap a compacted leader's log has (§4.4)"),
    Weight("record key", {"a, b or c": 1, "any text": 1, "none": 1},
           "repeated keys leave values to clean (§5.9); a compacted topic's leader needs a key (§4.14)"),
    Weight("record value", {"text": 1, "none": 1},
           "a null value is a tombstone, which cleaning removes past delete.retention.ms (§5.9)"),
    Weight("truncation offset", {"anywhere": 1, "a segment's base or one past it": 1, "a batch's first offset": 1},
           "where a step stops removing segments and cuts one (§4.7, §4.9); where a follower cuts (KIP-101)"),
    Weight("race: who races", {"a fetch and an append": 2, "two fetches": 1},
           "an append beside a fetch opens a just-rolled segment's indexes; two fetches open a loaded "
           "segment's, which a load leaves unopened since KAFKA-7283 — the race Kafka 2.3.x loses "
           "(KAFKA-9156, §7.4; corpora/KAFKA-9156)"),
    Weight("race: the fetch's bound", {"the log end": 1, "anywhere": 1},
           "a fetch to the log end beside an append, both first to open lazy indexes (KAFKA-9156, §7.4)"),
    Weight("race: the fetch's offset", {"just below its bound": 1, "anywhere": 1},
           "a fetch of the last batch, which the racing append's index entries follow (§7.4)"),
    # --- batches, segments and their damage (conformance/strategies.py) ----------------------------------
    Weight("blob: near 4 KiB", Fraction(1, 10),
           "a batch near 4 KiB crosses a page and index.interval.bytes (§3.1)"),
    Weight("v2 record: offset delta", {1: 3, 2: 1},
           "a gap between records' offset deltas, as compaction leaves in a batch (§1.6)"),
    Weight("v2 batch: magic", {2: 4, 3: 1, 127: 1},
           "mostly v2; an unknown magic value is refused (§1.10)"),
    Weight("v2 batch: control", Fraction(1, 8),
           "a control batch (a transaction marker) is skipped by record reads (§1.5)"),
    Weight("v2 batch: delete horizon", Fraction(1, 8),
           "the delete-horizon bit changes what the base timestamp means (§1.5)"),
    Weight("v2 batch: extra attribute bits", {0: 3, 0x80: 1, 0x100: 1, 0x7F00: 1},
           "attribute bits no release assigns, which readers must ignore (§1.5)"),
    Weight("v2 batch: last offset delta", {None: 3, INT32_MAX: 1, INT32_MAX - 1: 1, -(2**31): 1, -1: 1},
           "a lastOffsetDelta at int32's edges, which nextOffset and hasOverflow add (§4.5 rule 4)"),
    Weight("timestamp", {"-1, 0, 1, 2020, 2^62 or the largest": 1, "any": 1},
           "no timestamp (-1), the epoch, and values past any clock (§1.5, §3.3)"),
    Weight("legacy message: offset", {"0, 1, 2^31-1, 2^31 or the largest": 1, "any below 2^40": 1},
           "offsets at int32's edge, which a relative offset cannot hold (KAFKA-5413)"),
    Weight("legacy message: codec", {NONE: 2, GZIP: 1, SNAPPY: 1, LZ4: 1},
           "a plain message, and each codec's wrapper (§1.8, §1.9)"),
    Weight("damage site", {"a structure's edge": 1, "a batch's first byte or an entry's digit": 1,
                           "a field of a batch an index names": 1, "anywhere": 1},
           "fields, as a grammar-aware fuzzer mutates (§1.5, §5.5), and what a clean load trusts (KAFKA-7283)"),
    Weight("hostile: records compressed", Fraction(1, 2),
           "junk inside a valid compression frame, past the codec's own checks (§1.6)"),
    Weight("hostile: records cut", Fraction(1, 2),
           "a records section shorter than its count says (§1.6)"),
    Weight("hostile: null legacy value", Fraction(1, 6),
           "a wrapper without a value: nothing to decompress (§1.8)"),
    Weight("hostile: a legacy length lied about", Fraction(1, 2),
           "a key or value length past the message, under a valid CRC (§1.7)"),
    # --- the index machine (conformance/index_machine.py) -------------------------------------------------
    Weight("index: a dirty page lost at a power loss", Fraction(1, 2),
           "each page dirtied since the last flush keeps its new or its old content (§3.5)"),
)
# fmt: on

WEIGHTS = {w.name: w for w in TABLE}
assert len(WEIGHTS) == len(TABLE), "a name in the weights table twice"


def probability(name: str) -> Fraction:
    value = WEIGHTS[name].value
    if not isinstance(value, Fraction):
        raise TypeError(f"{name!r} is a table of weights, not a chance")
    return value


def chance(draw, name: str, label: str | None = None) -> bool:
    """Whether the step ``name`` is taken: an integer in [0, n) for a chance of k/n, the less likely
    outcome on its lowest values.  ``draw``: a composite's ``draw`` or ``data.draw``."""
    p = probability(name)
    value = draw(st.integers(0, p.denominator - 1), label=label)
    return value < p.numerator if 2 * p <= 1 else value >= p.denominator - p.numerator


def coins(name: str):
    """The strategy of a 1/2 chance drawn as a boolean."""
    if probability(name) != Fraction(1, 2):
        raise ValueError(f"{name!r} is drawn as a coin, which is a chance of 1/2")
    return st.booleans()


def coin(draw, name: str, label: str | None = None) -> bool:
    return draw(coins(name), label=label)


def _weights(name: str) -> Mapping:
    value = WEIGHTS[name].value
    if isinstance(value, Fraction):
        raise TypeError(f"{name!r} is a chance, not a table of weights")
    return value


def choices(name: str) -> tuple:
    """The options of ``name``, each repeated its weight times, in the table's order: what a
    ``sampled_from`` draws from."""
    return tuple(option for option, weight in _weights(name).items() for _ in range(weight))


def weighted(name: str, options: Mapping[object, object]):
    """A ``one_of`` of the strategies ``options`` gives (by option; those it leaves out are not
    drawn), in the table's order, each option's strategy repeated its weight times.  One strategy
    object counts once in a ``one_of``, so an option of weight above 1 is given as a function that
    builds its strategy, called once per copy."""
    weights = _weights(name)
    unknown = set(options) - set(weights)
    if unknown:
        raise KeyError(f"{name!r} has no option {sorted(map(str, unknown))}")
    copies = []
    for option, weight in weights.items():
        if option not in options:
            continue
        given = options[option]
        if callable(given):
            copies += [given() for _ in range(weight)]
        elif weight == 1:
            copies.append(given)
        else:
            raise ValueError(f"{name!r}: option {option!r} of weight {weight} needs a function building its strategy")
    return copies[0] if len(copies) == 1 else st.one_of(*copies)
