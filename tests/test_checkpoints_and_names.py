"""Names (spec §2.1, §2.3) and checkpoint files (§6.5): model and impl are independent readers that
must agree on any input; impl's writer follows Kafka's atomic procedure on real files."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import impl.checkpoints as IC
import impl.names as IN
import impl.segment as IS
import model.checkpoints as MC
import model.names as MN
from impl.storage import OsStorage

LONG_MAX, INT_MAX = 2**63 - 1, 2**31 - 1
HEX32 = "0123456789abcdef0123456789abcdef"


def outcome(fn, *args):
    """A result or an error, in the terms both implementations share."""
    try:
        return ("ok", fn(*args))
    except (MC.CheckpointError, IC.CheckpointError) as e:
        return ("error", e.kind, e.reason, e.line, e.detail)
    except (MN.NameError_, IN.BadName) as e:
        return ("error", e.kind, e.reason, e.name, e.detail)


def both(model_fn, impl_fn, *args):
    """The shared outcome of model and impl (they must agree)."""
    m, i = outcome(model_fn, *args), outcome(impl_fn, *args)
    assert m == i, (args, m, i)
    return m


# --- §2.1 file-name prefix ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "offset, prefix",
    [(0, "00000000000000000000"), (368769, "00000000000000368769"), (LONG_MAX, "09223372036854775807"),
     (-5, "-00000000000000000005")],
)  # fmt: skip
def test_filename_prefix(offset, prefix):
    assert MN.filename_prefix(offset) == IS.filename_prefix(offset) == prefix


@pytest.mark.parametrize(
    "name, want",
    [
        ("00000000000000368769.log", 368769),
        ("00000000000000000001.log.deleted", 1),  # the FIRST dot
        ("00000000000000000007.snapshot", 7),
        ("9223372036854775807.index", LONG_MAX),
        ("-9223372036854775808.x", -(2**63)),
        ("-00000000000000000005.log", -5),
        ("+1.log", 1),
        ("٣.log", 3),  # Character.digit reads every BMP decimal digit
        ("00000000000000000042", "StringIndexOutOfBoundsException"),
        ("", "StringIndexOutOfBoundsException"),
        (".log", "NumberFormatException"),
        ("x.log", "NumberFormatException"),
        ("9223372036854775808.log", "NumberFormatException"),
        ("99999999999999999999.log", "NumberFormatException"),
        (" 1.log", "NumberFormatException"),
        ("1_0.log", "NumberFormatException"),
        ("+.log", "NumberFormatException"),
        ("\U0001d7ce.log", "NumberFormatException"),  # a digit outside the BMP: two chars to Java
    ],
)
def test_offset_from_file_name(name, want):
    got = both(MN.offset_from_file_name, IN.offset_from_file_name, name)
    assert got == ("ok", want) if isinstance(want, int) else got[:2] == ("error", want)


@given(st.integers(-(2**63), LONG_MAX), st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot",
                                                          ".log.deleted", ".log.swap", ".index.cleaned"]))  # fmt: skip
def test_prefix_round_trip(offset, suffix):
    name = MN.filename_prefix(offset) + suffix
    assert IS.filename_prefix(offset) + suffix == name
    assert MN.offset_from_file_name(name) == IN.offset_from_file_name(name) == offset


@given(st.lists(st.integers(0, LONG_MAX), min_size=2, max_size=10))
def test_prefix_order_is_numeric_order(offsets):
    """§2.1 rule 3: the loader sorts paths lexicographically."""
    assert sorted(offsets, key=MN.filename_prefix) == sorted(offsets)


# --- §2.3 partition directory names -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, want",
    [
        ("orders-3", ("orders", 3, "")),
        ("my-topic-12", ("my-topic", 12, "")),
        ("__consumer_offsets-49", ("__consumer_offsets", 49, "")),
        ("t--1", ("t-", 1, "")),  # split at the LAST '-'
        ("t-+4", ("t", 4, "")),
        ("t-٣", ("t", 3, "")),
        (f"orders-3.{HEX32}-delete", ("orders", 3, "delete")),
        (f"orders-3.{HEX32}-future", ("orders", 3, "future")),
        (f"orders-3.{HEX32}-stray", ("orders", 3, "stray")),
        (f"my.topic-0.{HEX32}-delete", ("my.topic", 0, "delete")),
        (f"a-b-7.{HEX32}-stray", ("a-b", 7, "stray")),
        ("t-0.x-delete", ("t", 0, "delete")),  # the pattern does not insist on 32 hex digits
    ],
)
def test_partition_dir_names(name, want):
    assert both(MN.parse_topic_partition, IN.parse_topic_partition, name) == ("ok", want)


@pytest.mark.parametrize(
    "rule, name",
    [
        ("1: empty", ""),
        ("1: no '-'", "orders3"),
        ("1: no '-'", f"orders3.{HEX32}"),
        ("2: no '.'", "t-0-delete"),
        ("2: nothing after '-'", "x-delete"),
        ("2: empty topic", f"-0.{HEX32}-delete"),
        ("2: empty partition", f"t-.{HEX32}-future"),
        ("2: empty unique id", "t-0.-stray"),
        ("2: whitespace", f"my topic-0.{HEX32}-delete"),
        ("2: whitespace", "t-0.ab\tc-future"),
        ("2: '-' only after the '.'", "a.b-delete"),
        ("3: strip from the LAST '.'", f"t-0.{HEX32}.x-delete"),
        ("4: empty topic", "-3"),
        ("4: empty partition", "t-"),
        ("4: not a number", "t-x"),
        ("4: not a number", "t-1.5"),
        ("4: not a number", "t- 1"),
        ("4: not a number", "t-1_0"),
        ("4: not a number", "t-\U0001d7ce"),
        ("4: int32 overflow", "t-2147483648"),
        ("4: suffix not at the end", f"t-0.{HEX32}-delete "),
        ("4: unknown suffix", f"t-0.{HEX32}-deleted"),
    ],
)
def test_partition_dir_name_failures(rule, name):
    got = both(MN.parse_topic_partition, IN.parse_topic_partition, name)
    assert got[:4] == ("error", "KafkaException", "not-topic-partition", name), rule
    assert f"'{name}' is not in the form of topic-partition or topic-partition.uniqueId-delete" in got[4]
    for parse, error in ((MN.parse_topic_partition, MN.NameError_), (IN.parse_topic_partition, IN.BadName)):
        with pytest.raises(error, match=r"Found directory /data/kafka/t-x, 't-x' is not in the form"):
            parse("t-x", "/data/kafka/t-x")


TOPICS = st.text("abcXYZ019._-", min_size=1, max_size=30)


@given(TOPICS, st.integers(0, INT_MAX), st.sampled_from(["", "delete", "future", "stray"]))
def test_dir_name_round_trip(topic, partition, kind):
    name = MN.log_dir_name(topic, partition)
    assert IN.log_dir_name(topic, partition) == name
    if kind:
        name += f".{uuid.uuid4().hex}-{kind}"
    assert both(MN.parse_topic_partition, IN.parse_topic_partition, name) == ("ok", (topic, partition, kind))


NAME_CHARS = st.sampled_from(list("ab-.+0139٣ \t\x0b\u00a0_") + ["-delete", "-future", "-stray", HEX32, "\U0001d7ce"])


@given(st.lists(NAME_CHARS, max_size=12).map("".join) | st.text(max_size=12))
def test_name_parsers_agree(name):
    both(MN.parse_topic_partition, IN.parse_topic_partition, name)
    both(MN.offset_from_file_name, IN.offset_from_file_name, name)


# --- §6.5 checkpoint text ----------------------------------------------------------------------------


def test_render():
    entries = {("t", 1): 9, ("a", 0): 3, ("a", 10): LONG_MAX}
    text = "0\n3\na 0 3\na 10 9223372036854775807\nt 1 9\n"
    assert MC.render_offsets(entries) == IC.render_offsets(entries) == text
    assert MC.render_offsets({}) == IC.render_offsets({}) == "0\n0\n"
    assert MC.render_epochs([(0, 0), (3, 17)]) == IC.render_epochs([(0, 0), (3, 17)]) == "0\n2\n0 0\n3 17\n"


def _malformed(line):
    return ("IOException", "malformed-line", line)


# (text, {(topic, partition): offset} or (kind, reason, line))
OFFSET_CASES = [
    # rule 1: empty file, only the version line
    ("", {}),
    ("0\n", {}),
    ("0", {}),
    ("0\r\n", {}),
    ("0\n0\n", {}),
    ("0\n2\norders 0 5\nt-x 3 17\n", {("orders", 0): 5, ("t-x", 3): 17}),
    # line terminators (BufferedReader.readLine) and whitespace runs (\s+)
    ("0\r\n1\r\nt 0 5", {("t", 0): 5}),
    ("0\r1\rt 0 5\r", {("t", 0): 5}),
    ("0\n1\nt\t0 \x0b\f 5  \n", {("t", 0): 5}),
    ("0\n1\n 0 5\n", {("", 0): 5}),  # a leading run makes an empty first field: topic ""
    ("0\n2\nt 0 1\nt 0 2\n", {("t", 0): 2}),  # a map: the last value wins, both count
    ("0\n1\nt 0 -1\n", {("t", 0): -1}),
    ("0\n1\nt +0 +5\n", {("t", 0): 5}),
    ("٠\n١\nt ٣ ٥\n", {("t", 3): 5}),  # Unicode digits, also in the header
    ("-0\n", {}),
    ("+0\n0\n", {}),
    # rule 2: the version line
    ("\n", _malformed(1)),
    ("x\n0\n", _malformed(1)),
    ("0 \n0\n", _malformed(1)),
    (" 0\n0\n", _malformed(1)),
    ("\ufeff0\n0\n", _malformed(1)),  # a BOM is not skipped
    ("2147483648\n", _malformed(1)),
    ("1\n0\n", ("IOException", "unrecognised-version", 1)),
    ("1\n", ("IOException", "unrecognised-version", 1)),  # checked before "only a version line"
    ("-1\nx\n", ("IOException", "unrecognised-version", 1)),
    # rule 3: the count line
    ("0\ntwo\n", _malformed(2)),
    ("0\n\n", _malformed(2)),
    ("0\n1.0\n", _malformed(2)),
    ("0\n-1\n", ("IllegalArgumentException", "negative-count", 2)),  # new ArrayList<>(-1)
    ("0\n-1\nt 0 5\nnonsense\n", ("IllegalArgumentException", "negative-count", 2)),
    # rule 4: entry lines
    ("0\n1\nt 0\n", _malformed(3)),
    ("0\n1\nt 0 5 6\n", _malformed(3)),
    ("0\n1\n t 0 5\n", _malformed(3)),
    ("0\n1\n\n", _malformed(3)),
    ("0\n1\n   \n", _malformed(3)),
    ("0\n1\nt 0 5\n\n", _malformed(4)),  # a blank line is an entry line too
    ("0\n1\nt\u00a00 5\n", _malformed(3)),  # NBSP is not Java's \s
    ("0\n1\nt\x1c0 5\n", _malformed(3)),
    ("0\n1\nt\u20280 5\n", _malformed(3)),  # nor a line end
    ("0\n1\nt x 5\n", ("NumberFormatException", "number-format", 3)),
    ("0\n1\nt 0 x\n", ("NumberFormatException", "number-format", 3)),
    ("0\n1\nt 2147483648 0\n", ("NumberFormatException", "number-format", 3)),
    ("0\n1\nt 0 9223372036854775808\n", ("NumberFormatException", "number-format", 3)),
    ("0\n1\nt 0 1_0\n", ("NumberFormatException", "number-format", 3)),
    ("0\n1\nt 0 \U0001d7ce\n", ("NumberFormatException", "number-format", 3)),
    ("0\n3\nt 0 x\n", ("NumberFormatException", "number-format", 3)),  # before the count check
    ("0\n2\nt 0\nt x 1\n", _malformed(3)),  # the first bad line wins
    ("0\n2\nt 0 1\nt x 1\n", ("NumberFormatException", "number-format", 4)),
    # rule 5: the count
    ("0\n2\nt 0 5\n", ("IOException", "entry-count", 2)),
    ("0\n1\n", ("IOException", "entry-count", 2)),
    ("0\n1\nt 0 5\nu 1 6\n", ("IOException", "entry-count", 2)),
    ("0\n0\nt 0 5\n", ("IOException", "entry-count", 2)),
]


@pytest.mark.parametrize("text, want", OFFSET_CASES)
def test_offset_checkpoint_rules(text, want):
    for data in (text, text.encode()):
        got = both(MC.parse_offsets, IC.parse_offsets, data, "/d/recovery-point-offset-checkpoint")
        assert got[0] == "ok" and got[1] == want if isinstance(want, dict) else got[1:4] == want


EPOCH_CASES = [
    ("", []),
    ("0\n", []),
    ("0\n0\n", []),
    ("0\n2\n0 0\n3 17\n", [(0, 0), (3, 17)]),
    ("0\n2\n1 5\n1 5\n", [(1, 5), (1, 5)]),  # a list: duplicates stay
    ("0\n1\n2147483647 9223372036854775807\n", [(INT_MAX, LONG_MAX)]),
    ("0\n1\n 5\n", ("NumberFormatException", "number-format", 3)),  # fields "", "5"
    ("0\n1\n1\n", _malformed(3)),
    ("0\n1\n1 2 3\n", _malformed(3)),
    ("0\n1\n2147483648 0\n", ("NumberFormatException", "number-format", 3)),
    ("0\n1\n0 9223372036854775808\n", ("NumberFormatException", "number-format", 3)),
    ("3\n0\n", ("IOException", "unrecognised-version", 1)),
    ("0\n-2\n", ("IllegalArgumentException", "negative-count", 2)),
    ("0\n3\n0 0\n", ("IOException", "entry-count", 2)),
]


@pytest.mark.parametrize("text, want", EPOCH_CASES)
def test_epoch_checkpoint_rules(text, want):
    for data in (text, text.encode()):
        got = both(MC.parse_epochs, IC.parse_epochs, data, "/d/t-0/leader-epoch-checkpoint")
        assert got[0] == "ok" and got[1] == want if isinstance(want, list) else got[1:4] == want


@pytest.mark.parametrize(
    "data, line",
    [(b"0\n1\n\xff 0 1\n", 3), (b"0\r\n1\r\nt 0 \xe2\x41\n", 3), (b"\xc0\x80\n", 1), (b"0\n1\rt 0 1\xf0\x9f", 3),
     (b"0\n1\nt 0 5\n\xed\xa0\x80", 4)],  # a bad byte, a bad continuation, an overlong, a cut-off end, a surrogate
)  # fmt: skip
def test_undecodable_bytes_are_an_io_error(data, line):
    for m, i in ((MC.parse_offsets, IC.parse_offsets), (MC.parse_epochs, IC.parse_epochs)):
        assert both(m, i, data, "f")[1:4] == ("IOException", "malformed-input", line)


def test_error_names_file_and_line():
    for parse, error in ((MC.parse_offsets, MC.CheckpointError), (IC.parse_offsets, IC.CheckpointError)):
        with pytest.raises(error) as info:
            parse("0\n1\nt 0\n", "/data/recovery-point-offset-checkpoint")
        e = info.value
        assert (e.kind, e.reason, e.file, e.line) == (
            "IOException",
            "malformed-line",
            "/data/recovery-point-offset-checkpoint",
            3,
        )
        assert e.detail == "Malformed line in checkpoint file [/data/recovery-point-offset-checkpoint]: t 0"
        assert "/data/recovery-point-offset-checkpoint" in str(e) and "line 3" in str(e)


LINE_TOKENS = st.sampled_from(["0", "1", "2", "-1", "+3", "٣", "t", "t-x", "x", "", " ", "  ", "\t", "\x0b", "\f",
                               "\u00a0", "\U0001d7ce", "2147483648", "9223372036854775808", "99"])  # fmt: skip
TERMINATORS = st.sampled_from(["\n", "\r\n", "\r", ""])
CHECKPOINT_TEXT = st.one_of(
    st.lists(st.tuples(st.lists(LINE_TOKENS, max_size=5).map("".join), TERMINATORS), max_size=6).map(
        lambda lines: "".join(a + b for a, b in lines)
    ),
    st.text(st.sampled_from(list("0123 \t\r\nt-x+\x0b\f٣")), max_size=40),
    st.text(max_size=30),
)


@given(CHECKPOINT_TEXT)
def test_readers_agree_on_any_text(text):
    for data in (text, text.encode("utf-8", "surrogatepass")):
        both(MC.parse_offsets, IC.parse_offsets, data, "f")
        both(MC.parse_epochs, IC.parse_epochs, data, "f")


@given(st.binary(max_size=40) | CHECKPOINT_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass") + b"\xff"))
def test_readers_agree_on_any_bytes(data):
    both(MC.parse_offsets, IC.parse_offsets, data, "f")
    both(MC.parse_epochs, IC.parse_epochs, data, "f")


OFFSETS = st.dictionaries(st.tuples(TOPICS, st.integers(0, INT_MAX)), st.integers(-(2**63), LONG_MAX), max_size=8)
EPOCHS = st.lists(st.tuples(st.integers(-(2**31), INT_MAX), st.integers(-(2**63), LONG_MAX)), max_size=8)


@given(OFFSETS, EPOCHS)
def test_round_trips(offsets, epochs):
    text = MC.render_offsets(offsets)
    assert IC.render_offsets(offsets) == text
    assert MC.parse_offsets(text) == IC.parse_offsets(text.encode()) == offsets
    text = MC.render_epochs(epochs)
    assert IC.render_epochs(epochs) == text
    assert MC.parse_epochs(text.encode()) == IC.parse_epochs(text) == epochs


# --- impl: reading and the atomic write through the storage protocol -----------------------------------


class RecordingStorage:
    """OsStorage, with every call the writer makes recorded as (operation, file name, ...)."""

    def __init__(self, fail_fsync: bool = False):
        self.inner, self.calls, self.fail_fsync = OsStorage(), [], fail_fsync
        self.stats = self.inner.stats

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def open(self, path, create=False):
        self.calls.append(("open", Path(path).name, create))
        return RecordingFile(self.inner.open(path, create), self)

    def rename(self, src, dst):
        self.calls.append(("rename", Path(src).name, Path(dst).name))
        self.inner.rename(src, dst)

    def fsync_dir(self, path):
        self.calls.append(("fsync_dir", path))
        self.inner.fsync_dir(path)


class RecordingFile:
    def __init__(self, inner, storage: RecordingStorage):
        self.inner, self.storage, self.path = inner, storage, inner.path

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _record(self, *call):
        self.storage.calls.append((call[0], Path(self.path).name, *call[1:]))

    def truncate(self, size):
        self._record("truncate", size)
        self.inner.truncate(size)

    def write_at(self, offset, data):
        self._record("write", offset, bytes(data))
        self.inner.write_at(offset, data)

    def append(self, data):
        self._record("append", bytes(data))
        return self.inner.append(data)

    def fsync(self):
        self._record("fsync")
        if self.storage.fail_fsync:
            raise OSError("injected fsync failure")
        self.inner.fsync()

    def close(self):
        self._record("close")
        self.inner.close()


def _atomic_calls(name, directory, data):
    tmp = name + ".tmp"
    return [("open", tmp, True), ("truncate", tmp, 0), ("write", tmp, 0, data), ("fsync", tmp), ("close", tmp),
            ("rename", tmp, name), ("fsync_dir", directory)]  # fmt: skip


def test_atomic_write_procedure(tmp_path):
    storage = RecordingStorage()
    path = tmp_path / "recovery-point-offset-checkpoint"
    Path(f"{path}.tmp").write_text("garbage left by an earlier crash\n" * 10)  # longer than the new content
    path.write_text("0\n1\nold 0 1\n")
    IC.write_offsets(storage, str(path), {("t", 1): 9, ("a", 0): 3})
    data = b"0\n2\na 0 3\nt 1 9\n"
    assert storage.calls == _atomic_calls(path.name, str(tmp_path), data)  # temp write → fsync → rename → fsync_dir
    assert path.read_bytes() == data and not Path(f"{path}.tmp").exists()
    assert MC.parse_offsets(path.read_bytes()) == IC.read_offsets(storage, str(path)) == {("t", 1): 9, ("a", 0): 3}

    storage.calls.clear()
    epochs = tmp_path / "t-0" / "leader-epoch-checkpoint"
    epochs.parent.mkdir()
    IC.write_epochs(storage, str(epochs), [(0, 0), (3, 17)])
    assert storage.calls == _atomic_calls(epochs.name, str(epochs.parent), b"0\n2\n0 0\n3 17\n")
    assert IC.read_epochs(storage, str(epochs)) == MC.parse_epochs(epochs.read_bytes()) == [(0, 0), (3, 17)]


def test_write_relative_path_and_without_sync(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    storage = RecordingStorage()
    IC.write_epochs(storage, "leader-epoch-checkpoint", [(1, 5)])
    assert storage.calls[-1] == ("fsync_dir", ".")
    storage.calls.clear()
    IC.write_epochs(storage, "leader-epoch-checkpoint", [(1, 5), (2, 9)], sync=False)  # write(entries, false)
    assert [c[0] for c in storage.calls] == ["open", "truncate", "write", "close", "rename"]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n1 5\n2 9\n"


def test_failed_write_leaves_the_checkpoint(tmp_path):
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text("0\n1\nt 0 7\n")
    storage = RecordingStorage(fail_fsync=True)
    with pytest.raises(OSError, match="injected"):
        IC.write_offsets(storage, str(path), {("t", 0): 8})
    assert [c[0] for c in storage.calls][-2:] == ["fsync", "close"]  # closed, never renamed
    assert IC.read_offsets(OsStorage(), str(path)) == {("t", 0): 7}


def test_read_through_storage(tmp_path):
    storage = OsStorage()
    assert IC.read_offsets(storage, str(tmp_path / "absent")) == {}
    assert IC.read_epochs(storage, str(tmp_path / "absent")) == []
    for text, want in OFFSET_CASES:
        (tmp_path / "cp").write_bytes(text.encode())
        got = outcome(IC.read_offsets, storage, str(tmp_path / "cp"))
        assert got[1] == want if isinstance(want, dict) else got[1:4] == want
    (tmp_path / "cp").write_bytes(b"0\n1\nt 0\n")
    with pytest.raises(IC.CheckpointError) as info:
        IC.read_offsets(storage, str(tmp_path / "cp"))
    assert info.value.file == str(tmp_path / "cp")


# --- real broker data ------------------------------------------------------------------------------------

OFFSET_FILES = {"recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint",
                "cleaner-offset-checkpoint"}  # fmt: skip


@pytest.mark.realdata
def test_real_checkpoint_files(shared_dir):
    real = shared_dir / "real-data"
    found = sorted(p for p in real.rglob("*checkpoint*") if p.is_file())
    # KRaft snapshots (*.checkpoint, bootstrap.checkpoint) are binary record files, not §6.5 text
    text_files = [p for p in found if p.name in OFFSET_FILES or p.name == "leader-epoch-checkpoint"]
    assert all(p.suffix == ".checkpoint" for p in found if p not in text_files)
    assert text_files
    storage = OsStorage(read_only=True)  # reads only; nothing is written under real-data
    offsets = {}
    for path in text_files:
        if path.name == "leader-epoch-checkpoint":
            m = outcome(MC.parse_epochs, path.read_bytes(), str(path))
            assert m == outcome(IC.read_epochs, storage, str(path)) and m[0] == "ok", (path, m)
            epochs = m[1]
            assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(epochs, epochs[1:], strict=False)), path
            assert MN.parse_topic_partition(path.parent.name)[2] == ""
        else:
            m = outcome(MC.parse_offsets, path.read_bytes(), str(path))
            assert m == outcome(IC.read_offsets, storage, str(path)) and m[0] == "ok", (path, m)
            offsets[path] = m[1]
    roots = {p.parent for p in offsets if p.name == "recovery-point-offset-checkpoint"}
    assert roots
    for root in roots:
        partitions = {MN.parse_topic_partition(d.name)[:2] for d in root.iterdir() if d.is_dir()}
        partitions = {tp for tp in partitions if tp[0] != "__cluster_metadata"}  # not in LogManager's checkpoints
        assert partitions
        recovery = offsets[root / "recovery-point-offset-checkpoint"]
        assert partitions <= set(recovery), root  # every log beside the checkpoint has a recovery point
        assert partitions <= set(offsets[root / "replication-offset-checkpoint"]), root
        assert set(offsets[root / "log-start-offset-checkpoint"]) <= set(recovery)
        if (root / ".kafka_cleanshutdown").exists():  # a clean shutdown checkpoints exactly its logs (§6.3 3a)
            assert set(recovery) == partitions, root


NUMBERS = [
    "9" * 5000,  # past Python's 4,300-digit int() limit: an overflow for Java
    "0" * 5000 + "12",  # leading zeros are any number long for Java
    "\u0663" * 300_000,  # Arabic-Indic digits: Character.digit reads them; an overflow
    "-9223372036854775808", "9223372036854775808", "+7", "+", "-", "", "\u0660\u0660\u0663", "12a",
]  # fmt: skip


@pytest.mark.parametrize("text", NUMBERS, ids=lambda t: t[:12] + f"…{len(t)}" if len(t) > 12 else t or "empty")
@pytest.mark.parametrize("bits", [32, 64])
def test_java_number_parsers_agree_on_any_length(text, bits):
    assert MN.java_integer(text, bits) == IN.parse_java_number(text, bits)


def test_huge_numbers_overflow_and_are_quoted_short():
    assert MN.java_integer("9" * 5000, 64) is None and MN.java_integer("0" * 5000 + "12", 64) == 12
    assert MN.java_integer("\u0663" * 300_000, 64) is None and MN.java_integer("\u0660\u0660\u0663", 32) == 3
    text = f"0\n1\nt 0 {'9' * 5000}\n"
    for reader in (MC.parse_offsets, IC.parse_offsets):
        with pytest.raises(Exception) as info:
            reader(text, "d0/recovery-point-offset-checkpoint")
        message = str(info.value)
        assert "NumberFormatException" in message and "(5000 characters)" in message and len(message) < 300


def test_delete_dir_names_and_their_ids():
    """§2.3 rule 2: <topic>-<partition>.<id>-delete, the topic cut so the name fits 255 characters
    (model and impl alike); the scenario's id skips one whose directory is on disk."""
    from conformance.targets import unique_id_source
    from impl.names import log_delete_dir_name as impl_name
    from model.names import log_delete_dir_name as model_name

    uid = "0" * 32
    for topic in ("t", "x" * 249, "y" * 300):
        name = model_name(topic, 7, uid)
        assert name == impl_name(topic, 7, uid) and name.endswith(f"-7.{uid}-delete")
        assert len(name) == min(255, len(topic) + len(f"-7.{uid}-delete"))
        assert MN.parse_topic_partition(name)[1:] == (7, "delete")
    draw = unique_id_source(0)
    first = draw("t", 0, lambda name: False)
    second = draw("t", 0, lambda name: name == model_name("t", 0, first))
    assert len(first) == len(second) == 32 and first != second and int(first, 16) >= 0
    assert draw("t", 0, lambda name: False) == first and unique_id_source(1)("t", 0, lambda n: False) != first
