"""The log cleaner of the implementation (impl/cleaner.py): one round on real files (OS storage in a
temporary directory) and on the simulated storage (whose trace gives the order of the storage
operations).  Batches are built and parsed here by a small encoder of this file's own, so the
cleaner's writer is checked against an independent one."""

from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c

from conformance.sim_storage import SimStorage
from conformance.tracing import TracingStorage
from impl.config import LogConfig
from impl.errors import LogFormatError
from impl.log import LogError
from impl.log_manager import LogManager
from impl.storage import OsStorage

T0 = 1_700_000_000_000
DAY = 86_400_000


# --- a tiny independent v2 encoder / decoder ----------------------------------------------------------


def _uvarint(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def varint(n: int) -> bytes:
    return _uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def varlong(n: int) -> bytes:
    return _uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _nullable(b: bytes | None) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def record(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"\x00" + varlong(ts_delta) + varint(offset_delta) + _nullable(key) + _nullable(value) + varint(0)
    return varint(len(body)) + body


def batch(
    base: int,
    records: list[tuple[int, bytes | None, bytes | None]],
    *,
    deltas: list[int] | None = None,
    last_offset_delta: int | None = None,
    attributes: int = 0,
    base_ts: int | None = None,
    count: int | None = None,
    epoch: int = 0,
    payload: bytes | None = None,
) -> bytes:
    """A v2 batch of (timestamp, key, value) records at offsets base + deltas (default 0, 1, …)."""
    deltas = list(range(len(records))) if deltas is None else deltas
    if base_ts is None:
        base_ts = records[0][0] if records else -1
    body = b"".join(record(d, ts - base_ts, k, v) for d, (ts, k, v) in zip(deltas, records, strict=True))
    if payload is not None:
        body = payload
    lod = deltas[-1] if last_offset_delta is None else last_offset_delta
    max_ts = max((ts for ts, _, _ in records), default=-1)
    n = len(records) if count is None else count
    after_crc = struct.pack(">hiqqqhii", attributes, lod, base_ts, max_ts, -1, -1, -1, n) + body
    return struct.pack(">qiib", base, 9 + len(after_crc), epoch, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc


def parse_batches(data: bytes) -> list[dict]:
    out, pos = [], 0
    while pos < len(data):
        base, length, ple, magic, crc = struct.unpack_from(">qiibI", data, pos)
        attrs, lod, bts, mts, pid, pep, seq, cnt = struct.unpack_from(">hiqqqhii", data, pos + 21)
        raw = data[pos : pos + 12 + length]
        assert crc32c(raw[21:]) == crc
        body = raw[61:]
        if attrs & 7 == 1:
            body = zlib.decompress(body, 31)
        out.append(
            {
                "base": base,
                "lod": lod,
                "attrs": attrs,
                "base_ts": bts,
                "max_ts": mts,
                "count": cnt,
                "records": _parse_records(body, base, bts, cnt),
                "raw": raw,
            }
        )
        pos += 12 + length
    return out


def _read_varint(data: bytes, p: int, long: bool = False) -> tuple[int, int]:
    u = shift = 0
    while True:
        b = data[p]
        p += 1
        u |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (u >> 1) ^ -(u & 1), p


def _parse_records(
    body: bytes, base: int, base_ts: int, count: int
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out, p = [], 0
    for _ in range(count):
        _, p = _read_varint(body, p)
        p += 1
        tsd, p = _read_varint(body, p)
        od, p = _read_varint(body, p)
        kl, p = _read_varint(body, p)
        key = body[p : p + kl] if kl >= 0 else None
        p += max(kl, 0)
        vl, p = _read_varint(body, p)
        value = body[p : p + vl] if vl >= 0 else None
        p += max(vl, 0)
        _, p = _read_varint(body, p)
        out.append((base + od, base_ts + tsd, key, value))
    return out


# --- a log on either backend ---------------------------------------------------------------------------


class Env:
    def __init__(self, backend: str, tmp_path, **config):
        self.now = [T0]
        self.clock = lambda: self.now[0]
        if backend == "os":
            root = str(tmp_path)
            inner = OsStorage()
        else:
            root = "/kafka"
            inner = SimStorage(clock=self.clock)
            inner.make_dirs(root)
        self.storage = TracingStorage(inner)
        values = {"cleanup.policy": "compact", **config}
        self.manager = LogManager(self.storage, [f"{root}/d0"], LogConfig.from_dict(values), self.clock, lambda p, b: 0)
        self.storage.make_dirs(f"{root}/d0")
        self.log = self.manager.create_log("t", 0)
        self.dir = self.log.dir

    def append(self, *batches: bytes) -> None:
        for b in batches:
            self.log.append(b)

    def follower(self, *batches: bytes) -> None:
        for b in batches:
            self.log.append(b, leader=False)

    def replicate(self, *batches: bytes) -> None:
        """Batches built at base 0 placed at the log end as replication brings them: how a keyless
        record or a malformed batch reaches a compacted log, whose leader refuses both (§4.14)."""
        for b in batches:
            self.follower(struct.pack(">q", self.log.log_end_offset) + b[8:])

    def files(self) -> list[str]:
        return sorted(self.storage.list_dir(self.dir))

    def segment_batches(self, i: int) -> list[dict]:
        return parse_batches(bytes(self.log.segments[i].view()))

    def records(self, i: int) -> list[tuple[int, bytes | None, bytes | None]]:
        return [(o, k, v) for b in self.segment_batches(i) for (o, _ts, k, v) in b["records"]]


BACKENDS = ["os", "sim"]


def kv(key: bytes | None, value: bytes | None, ts: int = T0) -> bytes:
    return batch(0, [(ts, key, value)])


# --- tests ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_latest_value_per_key_is_kept(backend, tmp_path):
    env = Env(backend, tmp_path)
    env.append(kv(b"a", b"1"), kv(b"b", b"2"), kv(b"a", b"3"), kv(b"c", b"4"))
    env.log.roll()
    env.append(kv(b"a", b"5"))  # in the active segment: mapped by nobody, untouched
    result = env.log.clean()
    assert result == {"groups": [[0]]}
    assert env.records(0) == [(1, b"b", b"2"), (2, b"a", b"3"), (3, b"c", b"4")]
    assert env.records(1) == [(4, b"a", b"5")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_fully_kept_batches_are_copied_byte_for_byte(backend, tmp_path):
    env = Env(backend, tmp_path)
    # a record attributes byte of 1 (ignored by readers): re-encoding the batch would write 0
    odd = b"\x01" + varlong(1) + varint(1) + _nullable(b"z") + _nullable(b"w") + varint(0)
    payload = record(0, 0, b"x", b"y") + varint(len(odd)) + odd
    kept = batch(0, [(T0 + 5, b"x", b"y"), (T0 + 6, b"z", b"w")], payload=payload)
    env.append(kv(b"a", b"1"), kept, kv(b"a", b"2"))
    before = env.segment_batches(0)
    env.log.roll()
    env.log.clean()
    after = env.segment_batches(0)
    assert [b["raw"] for b in after] == [before[1]["raw"], before[2]["raw"]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partly_filtered_batch_keeps_its_base_offset_and_last_offset_delta(backend, tmp_path):
    env = Env(backend, tmp_path)
    # offsets 0 (a), 1 (no key), 2 (b): the keyless record and the old b go; a later b stays.  A
    # compacted topic's leader refuses a keyless record (§4.14): it comes by replication
    env.replicate(batch(0, [(T0 + 1, b"a", b"1"), (T0 + 2, None, b"x"), (T0 + 3, b"b", b"2")]))
    env.append(kv(b"b", b"3", T0 + 9))
    env.log.roll()
    env.log.clean()
    rebuilt, last = env.segment_batches(0)
    assert (rebuilt["base"], rebuilt["lod"], rebuilt["count"]) == (0, 2, 1)
    assert rebuilt["records"] == [(0, T0 + 1, b"a", b"1")]
    assert rebuilt["max_ts"] == T0 + 1 and rebuilt["base_ts"] == T0 + 1
    # and exactly the bytes an independent encoder gives (canonical varints, attributes 0)
    assert rebuilt["raw"] == batch(0, [(T0 + 1, b"a", b"1")], last_offset_delta=2)
    assert last["records"] == [(3, T0 + 9, b"b", b"3")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_keyless_records_are_dropped(backend, tmp_path):
    env = Env(backend, tmp_path)
    env.replicate(kv(None, b"x"), kv(None, b"y"))
    env.append(kv(b"k", b"v"))
    env.log.roll()
    env.log.clean()
    assert env.records(0) == [(2, b"k", b"v")]


def test_a_rebuilt_compressed_batch_keeps_its_codec(tmp_path):
    from impl.codecs import compress

    env = Env("os", tmp_path)
    recs = [(T0, b"a", b"1" * 50), (T0 + 1, b"b", b"2" * 50)]
    plain = b"".join(record(i, ts - T0, k, v) for i, (ts, k, v) in enumerate(recs))
    env.append(batch(0, recs, attributes=1, payload=compress(1, plain)), kv(b"a", b"3"))
    env.log.roll()
    env.log.clean()
    rebuilt = env.segment_batches(0)[0]
    assert rebuilt["attrs"] & 7 == 1
    assert rebuilt["records"] == [(1, T0 + 1, b"b", b"2" * 50)]
    assert (rebuilt["base"], rebuilt["lod"]) == (0, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tombstone_gets_the_delete_horizon_then_goes(backend, tmp_path):
    env = Env(backend, tmp_path, **{"delete.retention.ms": DAY})
    env.append(kv(b"a", b"1"), kv(b"a", None, T0 + 1), kv(b"b", b"2", T0 + 2))
    env.log.roll()
    env.now[0] = T0 + 1000
    env.log.clean()
    tomb, keep = env.segment_batches(0)
    assert tomb["attrs"] & 0x40
    assert tomb["base_ts"] == T0 + 1000 + DAY  # now + delete.retention.ms
    assert tomb["records"] == [(1, T0 + 1, b"a", None)]  # the record's own timestamp survives
    assert tomb["max_ts"] == T0 + 1
    first_round = tomb["raw"]
    env.now[0] = T0 + 1000 + DAY - 1  # before the horizon: kept as it is
    env.log.clean()
    assert env.segment_batches(0)[0]["raw"] == first_round
    env.now[0] = T0 + 1000 + DAY  # at the horizon: gone
    env.log.clean()
    assert env.records(0) == [(2, b"b", b"2")]
    assert env.segment_batches(0)[0]["raw"] == keep["raw"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_rounds_last_batch_is_kept_even_when_emptied(backend, tmp_path):
    """checkBatchRetention: a batch whose next offset is the round's upper bound is RETAIN_EMPTY."""
    env = Env(backend, tmp_path)
    env.append(kv(b"a", b"1"))
    env.replicate(kv(None, b"x", T0 + 7))
    env.log.roll()
    env.log.clean()
    a, empty = env.segment_batches(0)
    assert a["records"] == [(0, T0, b"a", b"1")]
    assert (empty["base"], empty["lod"], empty["count"], empty["base_ts"], empty["max_ts"]) == (1, 0, 0, -1, T0 + 7)
    assert len(empty["raw"]) == 61


@pytest.mark.parametrize("backend", BACKENDS)
def test_groups_by_segment_bytes(backend, tmp_path):
    one = len(kv(b"k0", b"v"))
    env = Env(backend, tmp_path, **{"segment.bytes": 2 * one})
    for i in range(7):  # segments of two batches each: 0, 2, 4, then the active 6
        env.append(kv(b"k%d" % i, b"v"))
    assert [s.base_offset for s in env.log.segments] == [0, 2, 4, 6]
    # every record survives (unique keys), so each segment stays 2 batches: one per group
    assert env.log.clean() == {"groups": [[0], [2], [4]]}
    env.append(kv(b"k0", b"w"), kv(b"k2", b"w"), kv(b"k4", b"w"))  # supersede one record of each
    env.log.roll()
    # groups are made from the sizes before cleaning: still two batches in each
    assert env.log.clean() == {"groups": [[0], [2], [4], [6], [8]]}
    # now 0, 2 and 4 hold one batch each: 0+2 fit segment.bytes, 4+6 do not
    assert env.log.clean() == {"groups": [[0, 2], [4], [6], [8]]}
    assert [s.base_offset for s in env.log.segments] == [0, 4, 6, 8, 10]
    assert env.records(0) == [(1, b"k1", b"v"), (3, b"k3", b"v")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_groups_respect_the_relative_offset_limit(backend, tmp_path):
    """KAFKA-5413: a segment joins a group only if its offsets (bounded by the next base) fit
    relative to the group's first base; an empty segment is exempt."""
    env = Env(backend, tmp_path)
    env.follower(batch(0, [(T0, b"a", b"1"), (T0, b"b", b"2")]))
    env.log.roll()  # segment 2
    env.follower(batch(10, [(T0, b"c", b"3")]))
    env.log.roll(2**31 + 5)
    env.follower(batch(2**31 + 5, [(T0, b"d", b"4")]))
    assert [s.base_offset for s in env.log.segments] == [0, 2, 2**31 + 5]
    assert env.log.clean() == {"groups": [[0], [2]]}

    env2 = Env(backend, tmp_path / "empty")
    env2.follower(batch(0, [(T0, b"a", b"1"), (T0, b"b", b"2")]))
    env2.log.roll()  # segment 2 stays empty
    env2.log.roll(2**31 + 5)
    env2.follower(batch(2**31 + 5, [(T0, b"d", b"4")]))
    assert [s.base_offset for s in env2.log.segments] == [0, 2, 2**31 + 5]
    assert env2.log.clean() == {"groups": [[0, 2]]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_active_segment_is_untouched(backend, tmp_path):
    env = Env(backend, tmp_path)
    env.append(kv(b"a", b"1"))
    env.log.roll()
    env.append(kv(b"a", b"2"), kv(b"a", b"3"))
    active = env.log.active_segment
    before = bytes(active.view())
    mark = len(env.storage.trace)
    env.log.clean()
    assert env.log.active_segment is active and bytes(active.view()) == before
    assert not [op for op in env.storage.trace[mark:] if "00000000000000000001." in op.path + op.target]
    assert env.records(0) == [(0, b"a", b"1")]  # the active segment's keys are not in the map


def test_nothing_to_clean_without_an_inactive_segment(tmp_path):
    env = Env("os", tmp_path)
    env.append(kv(b"a", b"1"), kv(b"a", b"2"))
    assert env.log.clean() == {"groups": []}
    assert env.records(0) == [(0, b"a", b"1"), (1, b"a", b"2")]


def test_a_log_without_compact_is_refused(tmp_path):
    env = Env("os", tmp_path, **{"cleanup.policy": "delete"})
    env.append(kv(b"a", b"1"))
    env.log.roll()
    with pytest.raises(LogError) as e:
        env.log.clean()
    assert e.value.kind == "NotCompacted"


@pytest.mark.parametrize("backend", BACKENDS)
def test_old_files_are_renamed_deleted_then_deleted_after_the_delay(backend, tmp_path):
    env = Env(backend, tmp_path, **{"segment.bytes": 1000, "file.delete.delay.ms": 5000})
    env.append(kv(b"a", b"1"))
    env.log.roll()
    env.append(kv(b"b", b"1"))
    env.log.roll()
    assert env.log.clean() == {"groups": [[0, 1]]}
    names = env.files()
    assert "00000000000000000000.log.deleted" in names and "00000000000000000001.log.deleted" in names
    assert "00000000000000000000.log" in names and "00000000000000000001.log" not in names
    assert not [n for n in names if n.endswith((".cleaned", ".swap"))]
    env.now[0] += 4999
    env.manager.tick()
    assert [n for n in env.files() if n.endswith(".deleted")]
    env.now[0] += 1
    env.manager.tick()
    assert not [n for n in env.files() if n.endswith(".deleted")]
    assert [s.base_offset for s in env.log.segments] == [0, 2]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_cleaned_segment_keeps_the_last_sources_mtime(backend, tmp_path):
    env = Env(backend, tmp_path, **{"segment.bytes": 1000})
    env.append(kv(b"a", b"1"))
    env.log.roll()
    env.append(kv(b"b", b"1"))
    env.log.roll()
    env.storage.set_mtime_ms(env.log.segments[0].log_path, T0 - 5000)
    env.storage.set_mtime_ms(env.log.segments[1].log_path, T0 - 3000)
    env.now[0] = T0 + 10_000
    env.log.clean()
    assert env.storage.mtime_ms(env.log.segments[0].log_path) == T0 - 3000
    assert env.storage.mtime_ms(env.log.segments[0].offset_index.path) == T0 - 3000


def test_the_order_of_storage_operations(tmp_path):
    env = Env("sim", tmp_path, **{"segment.bytes": 1000})
    env.append(kv(b"a", b"1"), kv(b"a", b"2"))
    env.log.roll()
    env.append(kv(b"b", b"1"))
    env.log.roll()
    mark = len(env.storage.trace)
    env.log.clean()
    ops = env.storage.trace[mark:]
    # after the swap, the snapshots of the segments no new one replaces go (docs/producer-state.md,
    # rule 29): the one at 2, the second source's base, renamed .snapshot.deleted
    snapshot_ops = [op for op in ops if ".snapshot" in op.path]
    assert [(op.name, op.path.rsplit("/", 1)[1]) for op in snapshot_ops] == [("rename", f"{2:020d}.snapshot")]
    assert ops.index(snapshot_ops[0]) == len(ops) - 1
    ops = [op for op in ops if ".snapshot" not in op.path]
    renames = [i for i, op in enumerate(ops) if op.name == "rename"]
    first_rename = renames[0]
    cleaned_log = f"{env.dir}/00000000000000000000.log.cleaned"
    writes = [i for i, op in enumerate(ops) if op.name == "write" and op.path == cleaned_log]
    fsync = [i for i, op in enumerate(ops) if op.name == "fsync" and op.path == cleaned_log]
    assert writes and fsync and max(writes) < fsync[0] < first_rename
    # the indexes too are durable before the swap starts
    assert [op for op in ops[:first_rename] if op.name in ("flush_map", "fsync") and ".index.cleaned" in op.path]
    to_swap = [i for i in renames if ops[i].path.endswith(".cleaned") and ops[i].target.endswith(".swap")]
    to_deleted = [i for i in renames if ops[i].target.endswith(".deleted")]
    to_final = [i for i in renames if ops[i].path.endswith(".swap")]
    assert to_swap and to_deleted and to_final
    assert max(to_swap) < min(to_deleted) and max(to_deleted) < min(to_final)
    assert ops[to_swap[0]].path == cleaned_log  # the log file first (changeFileSuffixes)
    assert ops[-1].name == "fsync_dir"
    # nothing touches the originals' data
    assert not [op for op in ops if op.name in ("write", "truncate") and not op.path.endswith(".cleaned")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_malformed_source_batch_is_a_declared_error_naming_file_and_position(backend, tmp_path):
    env = Env(backend, tmp_path)
    good = kv(b"a", b"1")
    bad = batch(0, [(T0, b"b", b"2")], count=2)  # claims two records: InvalidRecordException
    env.append(good)
    env.replicate(bad)
    env.log.roll()
    with pytest.raises(LogFormatError) as e:
        env.log.clean()
    assert e.value.kind == "InvalidRecordException"
    assert e.value.position == len(good)
    assert e.value.file == env.log.segments[0].log_path
    assert not [n for n in env.files() if n.endswith(".cleaned")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failure_while_cleaning_leaves_the_cleaned_files_and_keeps_earlier_groups(backend, tmp_path):
    one = len(kv(b"a", b"1"))
    env = Env(backend, tmp_path, **{"segment.bytes": 2 * one + 10})
    env.append(kv(b"a", b"1"), kv(b"a", b"2"))  # segment 0: cleaned fine
    # segment 2: a record timestamped −5 in a batch that must be rebuilt (its keyless record goes):
    # the builder refuses it (IllegalArgumentException) after the .cleaned segment was created
    env.replicate(batch(0, [(T0, None, b"x"), (-5, b"c", b"3")]))
    env.log.roll()
    assert [s.base_offset for s in env.log.segments] == [0, 2, 4]
    with pytest.raises(LogFormatError) as e:
        env.log.clean()
    assert e.value.kind == "IllegalArgumentException"
    assert e.value.file == env.log.segments[1].log_path and e.value.position == 0
    # Kafka's cleanSegments deletes them on LogCleaningAbortedException only; the next load does
    assert [n for n in env.files() if ".cleaned" in n or ".swap" in n] == ["00000000000000000002.log.cleaned"]
    assert env.records(0) == [(1, b"a", b"2")]  # the first group was installed
    assert [o for o, _, _ in env.records(1)] == [2, 3]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_size_field_below_14_is_a_corrupt_record(backend, tmp_path):
    env = Env(backend, tmp_path)
    env.append(kv(b"a", b"1"), kv(b"b", b"1"))
    env.log.roll()
    segment = env.log.segments[0]
    at = len(kv(b"a", b"1"))
    f = env.storage.open(segment.log_path)
    f.write_at(at + 8, struct.pack(">i", 5))
    f.close()
    with pytest.raises(LogFormatError) as e:
        env.log.clean()
    assert (e.value.kind, e.value.position, e.value.file) == ("CorruptRecordException", at, segment.log_path)
    assert not [n for n in env.files() if n.endswith(".cleaned")]


def legacy_message(offset: int, key: bytes, value: bytes, ts: int = T0) -> bytes:
    """An uncompressed v1 message (spec §1.7)."""
    body = struct.pack(">bbq", 1, 0, ts) + struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def with_legacy_segment(env: Env, data: bytes, active_base: int) -> None:
    """Segment 0 replaced by a legacy segment an old broker left (its offsets may overflow the
    base, KAFKA-6264) below an active segment at ``active_base`` holding one batch."""
    from impl.segment import LogSegment

    env.log.roll(active_base)
    env.follower(batch(active_base, [(T0, b"z", b"9")]))
    old = env.log.segments[0]
    f = env.storage.open(old.log_path)
    f.write_at(0, data)
    f.close()
    old.close_handlers()
    segment = LogSegment(env.storage, env.dir, 0, env.log.config, T0, existing=True)
    env.log._segments[0] = segment


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_overflowing_append_splits_the_source_and_aborts_the_round(backend, tmp_path):
    env = Env(backend, tmp_path)
    data = legacy_message(0, b"a", b"1") + legacy_message(2**31 + 10, b"b", b"2")
    with_legacy_segment(env, data, 2**31 + 100)
    assert env.log.clean() == {"groups": [], "split": 0}
    assert [s.base_offset for s in env.log.segments] == [0, 2**31 + 10, 2**31 + 100]
    assert bytes(env.log.segments[0].view()) + bytes(env.log.segments[1].view()) == data
    assert not [n for n in env.files() if n.endswith((".cleaned", ".swap"))]
    assert "00000000000000000000.log.deleted" in env.files()
    # the next round cleans the split segments, one group each (KAFKA-5413), legacy batches kept
    assert env.log.clean() == {"groups": [[0], [2**31 + 10]]}
    assert bytes(env.log.segments[0].view()) + bytes(env.log.segments[1].view()) == data


def test_legacy_batches_are_dropped_whole_or_kept_whole(tmp_path):
    env = Env("os", tmp_path)
    first, second = legacy_message(0, b"a", b"1"), legacy_message(1, b"a", b"2")
    with_legacy_segment(env, first + second, 10)
    assert env.log.clean() == {"groups": [[0]]}
    assert bytes(env.log.segments[0].view()) == second


def test_a_legacy_wrapper_that_would_be_rebuilt_is_refused(tmp_path):
    env = Env("os", tmp_path)
    inner = legacy_message(0, b"a", b"1") + legacy_message(1, b"a", b"2")  # relative inner offsets
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    value = gz.compress(inner) + gz.flush()
    body = struct.pack(">bbqi", 1, 1, T0, -1) + struct.pack(">i", len(value)) + value
    wrapper = struct.pack(">qiI", 1, 4 + len(body), zlib.crc32(body)) + body
    with_legacy_segment(env, wrapper, 10)
    with pytest.raises(LogFormatError) as e:
        env.log.clean()
    assert (e.value.kind, e.value.position) == ("UnsupportedLegacyRebuild", 0)
    assert [n for n in env.files() if n.endswith(".cleaned")] == ["00000000000000000000.log.cleaned"]
