"""impl's transaction index against the model, and LazyIndex's file-only operations (§3.6, §3.7)."""

from __future__ import annotations

import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st

from conformance.index_machine import _outcome
from impl import txn_index as I
from impl.index import LazyIndex
from impl.storage import OsStorage
from model import indexes as M

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 3), st.integers(-5, 60), st.integers(-5, 60), st.integers(0, 60)),
        st.tuples(st.just("truncate_to"), st.integers(-1, 70)),
        st.tuples(st.just("reset")),
        st.tuples(st.just("collect"), st.integers(-1, 70), st.integers(-1, 70)),
        st.tuples(st.just("reopen")),
        st.tuples(st.just("sanity")),
        st.tuples(st.just("flush")),
    ),
    max_size=25,
)


@given(ops, st.sampled_from([0, 10]))
def test_transaction_index_conforms(steps, base):
    with tempfile.TemporaryDirectory(prefix="klc-txn-") as d:  # one dir per example: none left behind
        _transaction_index_conforms(steps, os.path.join(d, f"{base:020d}.txnindex"), base)


def _transaction_index_conforms(steps, path: str, base: int) -> None:
    storage = OsStorage()
    model = M.TransactionIndex(base)
    impl = I.TransactionIndex(storage, path, base)
    for step in steps:
        op = step[0]
        if op == "append":
            _, pid, first, last, lso = step
            a = _outcome(lambda: model.append(M.AbortedTxn(pid, first, last, lso)))
            b = _outcome(lambda: impl.append(I.AbortedTxn(pid, first, last, lso)))
        elif op == "truncate_to":
            a, b = _outcome(lambda: model.truncate_to(step[1])), _outcome(lambda: impl.truncate_to(step[1]))
        elif op == "reset":
            a, b = _outcome(model.reset), _outcome(impl.reset)
        elif op == "collect":
            a = _outcome(lambda: model.collect_aborted_txns(step[1], step[2]))
            b = _outcome(lambda: impl.collect_aborted_txns(step[1], step[2]))
            if a[0] == "ok":
                a = ("ok", ([tuple(attrs_tuple(t)) for t in a[1][0]], a[1][1]))
                b = ("ok", ([tuple(t) for t in b[1][0]], b[1][1]))
        elif op == "reopen":
            impl.close()
            impl = I.TransactionIndex(storage, path, base)
            model = M.TransactionIndex.open_existing(base, model.data) if model.exists else M.TransactionIndex(base)
            a = b = None
        elif op == "flush":
            impl.flush()
            a = b = None
        else:
            a, b = _outcome(model.sanity_check), _outcome(impl.sanity_check)
        assert a == b, step
        assert [attrs_tuple(t) for t in model.all_entries()] == [tuple(t) for t in impl.all_entries()]
        assert model.last_offset == impl.last_offset and model.exists == impl.exists
    impl.close()


def attrs_tuple(t: M.AbortedTxn) -> tuple:
    return (t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset, t.version)


def test_lazy_index_file_operations_never_materialise(tmp_path):
    storage = OsStorage()
    path = str(tmp_path / "00000000000000000000.index")
    lazy = LazyIndex.offset_index(storage, path, 0, 800)
    lazy.close()
    lazy.close_handler()
    lazy.rename_to(path + ".deleted")  # missing source tolerated
    assert not lazy.is_materialised and not os.path.exists(path) and lazy.path.endswith(".deleted")
    assert lazy.delete_if_exists() is False
    index = lazy.get()
    index.append(5, 100)
    assert lazy.get() is index and lazy.constructions == 1 and os.path.getsize(lazy.path) == 800
    lazy.rename_to(path)
    assert os.path.exists(path) and index.path == path
    lazy.close()  # materialised: trimmed
    assert os.path.getsize(path) == 8
    again = LazyIndex.time_index(storage, str(tmp_path / "0.timeindex"), 0, 120)
    again.get().maybe_append(7, 0)
    assert again.delete_if_exists() is True and not os.path.exists(again.path)
    assert storage.stats.opens >= 2 and storage.stats.maps >= 2


def test_storage_backend_basics(tmp_path):
    s = OsStorage()
    d = str(tmp_path / "a" / "b")
    s.make_dirs(d)
    f = s.open(d + "/x", create=True)
    assert f.append(b"hello") == 0 and f.append(b" world") == 5
    f.write_at(0, b"J")
    assert f.read(0, 11) == b"Jello world" and s.stats.bytes_read == 11
    f.fsync()
    view = f.view()
    assert bytes(view[:5]) == b"Jello"
    view.close()
    f.truncate(0)
    assert f.view() == b"" and len(f.map()) == 0
    f.close()
    s.rename(d + "/x", d + "/y")
    assert s.list_dir(d) == ["y"] and s.exists(d + "/y")
    s.fsync_dir(d)
    s.unlink(d + "/y")
    assert not s.exists(d + "/y")
    ro = OsStorage(read_only=True)
    import pytest

    with pytest.raises(PermissionError):
        ro.open(d + "/new", create=True)
