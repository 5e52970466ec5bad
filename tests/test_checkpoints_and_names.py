"""Checkpoint files and names (spec §2.1, §2.3, §6.5): model and impl are independent readers that
must agree on any text; impl's writer follows Kafka's atomic procedure."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import impl.checkpoints as IC
import impl.names as IN
import model.checkpoints as MC
import model.names as MN
from conformance.tracing import TracingStorage
from impl.storage import OsStorage


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except (MC.CheckpointError, IC.CheckpointError) as e:
        return ("error", e.kind, e.reason, e.line)
    except (MN.NameError_, IN.BadName) as e:
        return ("error", e.kind)


def test_prefixes_and_offsets():
    assert MN.filename_prefix(0) == IN.filename_prefix(0) == "00000000000000000000"
    assert MN.filename_prefix(368769) == IN.filename_prefix(368769) == "00000000000000368769"
    assert MN.filename_prefix(2**63 - 1) == IN.filename_prefix(2**63 - 1) == "09223372036854775807"
    for name, want in [("00000000000000000042.log", ("ok", 42)), ("x.log", ("error", "NumberFormatException")),
                       ("00000000000000000042", ("error", "StringIndexOutOfBoundsException")),
                       ("99999999999999999999.log", ("error", "NumberFormatException"))]:  # fmt: skip
        assert _outcome(MN.offset_from_file_name, name) == _outcome(IN.offset_from_file_name, name) == want


@pytest.mark.parametrize(
    "name, want",
    [
        ("orders-3", ("orders", 3, "")),
        ("my-topic-12", ("my-topic", 12, "")),
        ("t-0.0123456789abcdef0123456789abcdef-delete", ("t", 0, "delete")),
        ("t-1.abc-future", ("t", 1, "future")),
        ("t-2.abc-stray", ("t", 2, "stray")),
        ("t-+4", ("t", 4, "")),
        ("", None), ("nodash", None), ("t-", None), ("-3", None), ("t-x", None), ("t-2147483648", None),
        ("t-0-delete", None), ("t 1-0.a-delete", None), ("t-0.-delete", None), ("a.b-delete", None),
    ],
)  # fmt: skip
def test_partition_dir_names(name, want):
    for parse in (MN.parse_topic_partition, IN.parse_topic_partition):
        if want is None:
            with pytest.raises((MN.NameError_, IN.BadName), match="not in the form of topic-partition"):
                parse(name)
        else:
            assert parse(name) == want


@given(st.text(alphabet="ab-.0123456789 \t", max_size=16))
def test_name_parsers_agree(name):
    assert _outcome(MN.parse_topic_partition, name) == _outcome(IN.parse_topic_partition, name)


GOOD = "0\n2\norders 0 5\nt-x 3 17\n"


@pytest.mark.parametrize(
    "text, want",
    [
        ("", ("ok", {})),
        ("0\n", ("ok", {})),
        ("0\r\n1\r\nt 0 5", ("ok", {("t", 0): 5})),
        ("0\n1\nt\t0   5  \n", ("ok", {("t", 0): 5})),
        (GOOD, ("ok", {("orders", 0): 5, ("t-x", 3): 17})),
        ("1\n0\n", ("error", "IOException", "unrecognised-version", 1)),
        ("x\n", ("error", "IOException", "malformed-line", 1)),
        ("0\ntwo\n", ("error", "IOException", "malformed-line", 2)),
        ("0\n1\nt 0\n", ("error", "IOException", "malformed-line", 3)),
        ("0\n1\n t 0 5\n", ("error", "IOException", "malformed-line", 3)),
        ("0\n2\nt 0 5\n", ("error", "IOException", "entry-count", 3)),
        ("0\n1\nt 0 5\nu 1 6\n", ("error", "IOException", "entry-count", 4)),
        ("0\n1\nt x 5\n", ("error", "NumberFormatException", "bad-number", 3)),
        ("0\n1\nt 0 99999999999999999999\n", ("error", "NumberFormatException", "bad-number", 3)),
    ],
)  # fmt: skip
def test_offset_checkpoint_reading_rules(text, want):
    assert _outcome(MC.parse_offsets, text.encode(), "f") == want
    got = _outcome(lambda d, f: {(t, p): o for t, p, o in IC.parse(d, f, 3)}, text.encode(), "f")
    assert got == want


@given(st.text(alphabet="0123 \t\r\nt-x+", max_size=40) | st.binary(max_size=30).map(lambda b: b.decode("latin-1")))
def test_checkpoint_readers_agree_on_any_text(text):
    data = text.encode("utf-8", "surrogatepass")
    m = _outcome(MC.parse_offsets, data, "f")
    i = _outcome(lambda d, f: {(t, p): o for t, p, o in IC.parse(d, f, 3)}, data, "f")
    assert m == i
    assert _outcome(MC.parse_epochs, data, "f") == _outcome(
        lambda d, f: [tuple(e) for e in IC.parse(d, f, 2)], data, "f"
    )


@given(
    st.dictionaries(
        st.tuples(st.text("abc-_.", min_size=1, max_size=5), st.integers(0, 2**31 - 1)),
        st.integers(0, 2**63 - 1),
        max_size=5,
    )
)
def test_render_and_parse_round_trip(entries):
    assert MC.parse_offsets(MC.render_offsets(entries).encode()) == entries


def test_invalid_utf8_is_an_io_error():
    assert _outcome(MC.parse_offsets, b"0\n1\n\xff 0 1\n", "f")[:2] == ("error", "IOException")
    assert _outcome(lambda d, f: IC.parse(d, f, 3), b"0\n1\n\xff 0 1\n", "f")[:2] == ("error", "IOException")


def test_atomic_write_procedure(tmp_path):
    storage = TracingStorage(OsStorage())
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    (tmp_path / "recovery-point-offset-checkpoint.tmp").write_text("garbage left by a crash\n" * 10)
    IC.write_offsets(storage, path, {("t", 1): 9, ("a", 0): 3})
    assert Path(path).read_text() == "0\n2\na 0 3\nt 1 9\n"
    assert not Path(path + ".tmp").exists()
    names = [(op.name, Path(op.path).name) for op in storage.trace]
    assert names[-4:] == [("write", "recovery-point-offset-checkpoint.tmp"), ("fsync", "recovery-point-offset-checkpoint.tmp"),
                          ("rename", "recovery-point-offset-checkpoint.tmp"), ("fsync_dir", tmp_path.name)]  # fmt: skip
    assert IC.read_offsets(storage, path) == {("t", 1): 9, ("a", 0): 3}
    IC.write_epochs(storage, str(tmp_path / "leader-epoch-checkpoint"), [(0, 0), (3, 17)])
    assert IC.read_epochs(storage, str(tmp_path / "leader-epoch-checkpoint")) == [(0, 0), (3, 17)]
    assert IC.read_offsets(storage, str(tmp_path / "absent")) == {}


def test_real_checkpoint_files(shared_dir):
    names = {
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
        "leader-epoch-checkpoint",
    }  # (KRaft *.checkpoint snapshots are binary)
    files = sorted(p for p in (shared_dir / "real-data").rglob("*checkpoint") if p.name in names)
    assert files
    for path in files:
        data = path.read_bytes()
        width = 2 if path.name == "leader-epoch-checkpoint" else 3
        parse_m = MC.parse_epochs if width == 2 else MC.parse_offsets
        m = _outcome(parse_m, data, str(path))
        i = _outcome(lambda d, f: IC.parse(d, f, width), data, str(path))
        assert m[0] == i[0] == "ok", (path, m, i)
        if path.name == "recovery-point-offset-checkpoint" and (path.parent / ".kafka_cleanshutdown").exists():
            # a clean shutdown checkpoints every log of the dir (§6.3 step 3a)
            dirs = {d.name for d in path.parent.iterdir() if d.is_dir() and not d.name.startswith("__cluster_metadata")}
            assert {f"{t}-{p}" for t, p in m[1]} == dirs
