"""Hypothesis strategies for record batches, segments and the damage a disk can do to them.

Everything is encoded by the model (the specification), so the same bytes can be fed to both sides.
Values are drawn to reach Kafka's edges: every magic and codec, batch sizes near 4 KiB, relative
offsets near 2^31, timestamps −1/0/huge, sequences about to wrap, attribute bits that readers must
ignore.
"""

from __future__ import annotations

import struct
import zlib

from hypothesis import event
from hypothesis import strategies as st

from conformance.weights import chance, choices, coin, weighted
from model import compression
from model import records as R
from model.file_records import iterate_file
from model.indexes import file_entries

INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1

timestamps = weighted(
    "timestamp",
    {
        "-1, 0, 1, 2020, 2^62 or the largest": st.sampled_from([-1, 0, 1, 1_600_000_000_000, 2**62, INT64_MAX]),
        "any": st.integers(min_value=-1, max_value=INT64_MAX),
    },
)
small_blobs = st.one_of(st.none(), st.binary(max_size=24))


def _filler(length: int, seed: int) -> bytes:
    """Deterministic, not-too-compressible bytes (cheap to draw at 4 KiB)."""
    return bytes(((seed + i) * 2654435761 >> 13) & 0xFF for i in range(length))


@st.composite
def blobs(draw) -> bytes | None:
    """A key or value: mostly small, sometimes big enough to put the batch near 4 KiB."""
    if chance(draw, "blob: near 4 KiB"):
        return _filler(draw(st.integers(3900, 4200)), draw(st.integers(0, 255)))
    return draw(small_blobs)


@st.composite
def v2_records(draw, max_records: int = 4) -> list[R.Record]:
    n = draw(st.integers(0, max_records))
    out, offset_delta = [], 0
    for _ in range(n):
        headers = draw(st.lists(st.tuples(st.binary(max_size=8), small_blobs), max_size=2))
        out.append(
            R.Record(
                offset_delta=offset_delta,
                timestamp_delta=draw(st.sampled_from([0, 1, -1, 1000])),
                key=draw(small_blobs),
                value=draw(blobs()),
                headers=tuple(headers),
            )
        )
        offset_delta += draw(st.sampled_from(choices("v2 record: offset delta")))
    return out


@st.composite
def v2_batches(draw, base_offset: int | None = None) -> bytes:
    records = draw(v2_records())
    codec = draw(
        st.sampled_from([compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD])
    )
    event(f"v2 codec {compression.CODEC_NAMES[codec]}")
    fields = dict(
        base_offset=draw(st.integers(0, 2**40)) if base_offset is None else base_offset,
        records=records,
        codec=codec,
        timestamp_type=draw(st.sampled_from([R.CREATE_TIME, R.LOG_APPEND_TIME])),
        transactional=draw(st.booleans()),
        control=chance(draw, "v2 batch: control"),
        delete_horizon=chance(draw, "v2 batch: delete horizon"),
        base_timestamp=draw(timestamps),
        max_timestamp=draw(timestamps),
        producer_id=draw(st.sampled_from([-1, 0, 7, INT64_MAX])),
        producer_epoch=draw(st.sampled_from([-1, 0, 32767])),
        base_sequence=draw(st.sampled_from([-1, 0, INT32_MAX, INT32_MAX - 2])),
        partition_leader_epoch=draw(st.sampled_from([-1, 0, 5, INT32_MAX])),
        magic=draw(st.sampled_from(choices("v2 batch: magic"))),
        extra_attribute_bits=draw(st.sampled_from(choices("v2 batch: extra attribute bits"))),
    )
    near_overflow = draw(st.sampled_from(choices("v2 batch: last offset delta")))
    if near_overflow is not None:
        event("v2 lastOffsetDelta near the int32 edge")
        fields["last_offset_delta"] = near_overflow
    return R.encode_batch_v2(**fields)


@st.composite
def legacy_batches(draw, magic: int | None = None) -> bytes:
    magic = draw(st.sampled_from([0, 1])) if magic is None else magic
    offsets = {
        "0, 1, 2^31-1, 2^31 or the largest": st.sampled_from([0, 1, 2**31 - 1, 2**31, INT64_MAX]),
        "any below 2^40": st.integers(0, 2**40),
    }
    offset = draw(weighted("legacy message: offset", offsets))
    ts = draw(timestamps) if magic == 1 else R.NO_TIMESTAMP
    codec = draw(st.sampled_from(choices("legacy message: codec")))
    event(f"legacy v{magic} codec {compression.CODEC_NAMES[codec]}")
    if codec == compression.NONE:
        attributes = R.TIMESTAMP_TYPE_BIT if magic == 1 and draw(st.booleans()) else 0
        return R.encode_legacy_message(magic, offset, draw(small_blobs), draw(blobs()), ts, attributes)
    entries = draw(
        st.lists(st.tuples(timestamps if magic == 1 else st.just(-1), small_blobs, small_blobs), min_size=1, max_size=4)
    )
    ts_type = draw(st.sampled_from([R.CREATE_TIME, R.LOG_APPEND_TIME]))
    return R.build_legacy_wrapper(
        magic, codec, max(offset, len(entries)), entries, timestamp_type=ts_type, log_append_time=ts
    )


any_batch = st.one_of(v2_batches(), legacy_batches())


@st.composite
def segments(draw, min_batches: int = 0, max_batches: int = 6) -> bytes:
    """Concatenated batches of any magic, as a ``.log`` file or a Fetch record set holds them."""
    return b"".join(draw(st.lists(any_batch, min_size=min_batches, max_size=max_batches)))


# --- damage ------------------------------------------------------------------------------------

EXTREME_SIZES = [-(2**31), -1, 0, 1, 13, 14, 15, 48, 49, 50, 2**31 - 1]
EXTREME_MAGICS = [0, 1, 2, 3, 127, 0x80, 0xFF]


@st.composite
def damaged_segments(draw) -> bytes:
    """A valid segment with one kind of damage: cut, bit flip, zero or junk fill, extreme header
    values, or junk appended (what torn writes, lost pages and bad sectors leave behind)."""
    data = bytearray(draw(segments(min_batches=1)))
    starts = [b.position for b in iterate_file(bytes(data)).batches] or [0]
    kind = draw(st.sampled_from(["cut", "flip", "zero", "junk", "size", "magic", "append"]))
    event(f"damage {kind}")
    if kind == "cut":
        del data[draw(st.integers(0, len(data))) :]
    elif kind == "flip":
        bit = draw(st.integers(0, len(data) * 8 - 1))
        data[bit // 8] ^= 1 << (bit % 8)
    elif kind in ("zero", "junk"):
        a = draw(st.integers(0, len(data) - 1))
        b = draw(st.integers(a, min(len(data), a + 4096)))
        fill = bytes(b - a) if kind == "zero" else draw(st.binary(min_size=b - a, max_size=b - a))
        data[a:b] = fill
    elif kind == "size":
        pos = draw(st.sampled_from(starts))
        if pos + 12 <= len(data):
            data[pos + 8 : pos + 12] = struct.pack(">i", draw(st.sampled_from(EXTREME_SIZES)))
    elif kind == "magic":
        pos = draw(st.sampled_from(starts))
        if pos + 17 <= len(data):
            data[pos + 16] = draw(st.sampled_from(EXTREME_MAGICS))
    else:
        data += draw(st.binary(min_size=1, max_size=80))
    return bytes(data)


# Where damage lands (structure-aware, as a grammar-aware fuzzer mutates fields rather than bytes):
# the first and last byte of every field of a v2 batch header (§1.5) — a base offset's sign byte, a
# length, the CRC-covered max timestamp a clean load never checks (§4.5 rule 3) — and, for text
# checkpoints, the digits of their numbers (a flipped low bit keeps a digit: an epoch checkpoint
# whose entries no longer both increase, §3.3).  Uniform offsets hit a header field of a 1 KB
# segment one time in twenty and a checkpoint's digit seldom more often than its separators.
BATCH_FIELDS = ((0, 8), (8, 4), (12, 4), (16, 1), (17, 4), (21, 2), (23, 4), (27, 8), (35, 8), (43, 8), (57, 4))
TAIL_LENGTHS = (1, 11, 12, 17, 18, 60, 61)  # §1.10's rules turn on tails of 12, 17 and 61 bytes
# an index entry's fields by file suffix (§3.1, §3.2): entry size, and the first and last byte of
# each field — the relative offset and position of an offset index entry, the timestamp and relative
# offset of a time index entry
INDEX_FIELDS = {".index": (8, (0, 3, 4, 7)), ".timeindex": (12, (0, 7, 8, 11))}


def index_entries(path: str, content: bytes) -> int:
    """How many entries of the index at ``path`` Kafka lists: up to the first all-zero slot past the
    first (preallocated padding, §3.1)."""
    slots = file_entries(path, content)
    return next((n for n, slot in enumerate(slots) if n and slot == (0, 0)), len(slots))


def index_field_edges(path: str, content: bytes) -> list[int]:
    """The first and last byte of each field of the index's last two entries (:func:`index_entries`)."""
    size, edges = INDEX_FIELDS[path[path.rindex(".") :]]
    n = index_entries(path, content)
    return [e * size + f for e in range(max(0, n - 2), n) for f in edges]


def final_entry(path: str, content: bytes) -> tuple[int, int] | None:
    """(offset, length) of the last entry of the index at ``path`` that Kafka lists
    (:func:`index_entries`), None if it lists none: the slot a preallocated index left zero when it
    was not trimmed holds, which Kafka takes for the segment's largest timestamp (KAFKA-10207,
    KAFKA-19200, §7.8)."""
    size = INDEX_FIELDS[path[path.rindex(".") :]][0]
    n = index_entries(path, content)
    return ((n - 1) * size, size) if n else None


def batch_ends(content: bytes) -> list[int]:
    """0 and the end of every batch a framing-only scan of ``content`` finds: where a file may be cut
    back to, and where a tail begins."""
    return [0, *(b.position + len(b.raw) for b in iterate_file(content, validate=False).batches)]


def damage_site(path: str, content: bytes, kind: str, text: bool = False, named: tuple[int, ...] = ()):
    """An offset in ``path`` to damage, by the weights of "damage site": anywhere; at a structure's
    edge — a batch header field of one of the .log's last two batches (for a ``cut``: a tail of
    one of §1.10's lengths past a batch), a digit of a ``text`` checkpoint; any batch's first byte,
    a digit of a text checkpoint's entries; a header field of a batch an index entry names (the
    batch positions ``named``: what a clean load trusts the indexes about — the offset index's last
    entry starts the tail it reads, the time index's last entry is the segment's max timestamp,
    KAFKA-7283 — and what impl proves them against on first use).  In an ``.index`` or
    ``.timeindex``: a field of one of its last two entries (the final time entry zeroed is the
    segment's max timestamp gone to 1970, KAFKA-10207: retention deletes it early)."""
    anywhere = st.integers(0, len(content) - 1)
    sites: list[int] = []
    starts: list[int] = []
    fields: list[int] = []
    if path.endswith(".log"):
        batches = iterate_file(content, validate=False).batches
        if kind == "cut":
            sites = [e + d for e in batch_ends(content) for d in TAIL_LENGTHS]
        else:
            sites = [b.position + f + w for b in batches[-2:] for f, n in BATCH_FIELDS for w in {0, n - 1}]
            # any batch's first byte: its base offset's sign, outside the CRC, so a recovery keeps
            # the batch and splits the segment at a negative offset (§5.5; a case in corpora/crash)
            starts = [b.position for b in batches]
            fields = [p + f + w for p in named for f, n in BATCH_FIELDS for w in {0, n - 1} if p + f + w < len(content)]
    elif path.endswith(tuple(INDEX_FIELDS)):
        sites = index_field_edges(path, content)
    elif text:
        sites = [i for i, c in enumerate(content) if 0x30 <= c <= 0x39]
        # the entries' digits, past the version and count lines: a damaged entry that still parses
        # (a leader epoch no longer above the one before it, §6.5) rather than a refused file
        head = content.split(b"\n", 2)
        starts = [i for i in sites if len(head) == 3 and i >= len(head[0]) + len(head[1]) + 2]
    sites = sorted({s for s in sites if s < len(content)})
    options = {
        "a structure's edge": sites,
        "a batch's first byte or an entry's digit": starts,
        "a field of a batch an index names": fields,
    }
    options = {k: st.sampled_from(xs) for k, xs in options.items() if xs}
    return weighted("damage site", {**options, "anywhere": anywhere})


# --- valid CRC, hostile content: what deep iteration must survive --------------------------------


@st.composite
def hostile_batches(draw) -> bytes:
    """Batches that pass ``ensureValid`` (correct CRC) but whose records section is arbitrary:
    junk, truncated or lying record streams, junk inside a valid compression frame, extreme
    record counts, unknown codecs."""
    if draw(st.booleans()):
        codec = draw(st.integers(0, 7))
        inner = draw(
            st.one_of(st.binary(max_size=200), v2_records().map(lambda rs: b"".join(map(R.encode_record, rs))))
        )
        if coin(draw, "hostile: records cut") and inner:
            cut = draw(st.integers(0, len(inner)))
            inner = inner[:cut] + draw(st.binary(max_size=8))
        if 1 <= codec <= 4 and coin(draw, "hostile: records compressed"):
            payload = compression.compress(codec, inner, magic=2)
        else:
            payload = inner
        event(f"hostile v2 codec {codec}")
        return R.encode_batch_v2(
            base_offset=draw(st.integers(0, 2**40)),
            codec=codec,
            control=draw(st.booleans()),
            records_count=draw(st.sampled_from([-1, 0, 1, 2, 3, 2**31 - 1, -(2**31)])),
            payload=payload,
        )
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.integers(0, 7))
    inner = draw(st.one_of(st.binary(max_size=200), st.lists(legacy_batches(magic), max_size=3).map(b"".join)))
    if coin(draw, "hostile: records cut") and inner:
        inner = inner[: draw(st.integers(0, len(inner)))]
    compressed = 1 <= codec <= 3 and coin(draw, "hostile: records compressed")
    value = compression.compress(codec, inner, magic=magic) if compressed else inner
    event(f"hostile legacy v{magic} codec {codec}")
    key = draw(small_blobs)
    message = R.encode_legacy_message(
        magic, draw(st.integers(0, 2**40)), key, None if chance(draw, "hostile: null legacy value") else value, 0, codec
    )
    if coin(draw, "hostile: a legacy length lied about"):
        # lie about the key/value lengths inside the record but keep its CRC valid
        body = bytearray(message[16:])
        at = (2 if magic == 0 else 10) + draw(st.sampled_from([0, 4 + (len(key) if key else 0)]))
        if at + 4 <= len(body):
            body[at : at + 4] = struct.pack(">i", draw(st.sampled_from([-2, -1, 0, 2**31 - 1, len(body)])))

            message = message[:12] + struct.pack(">I", zlib.crc32(bytes(body))) + bytes(body)
    return message
