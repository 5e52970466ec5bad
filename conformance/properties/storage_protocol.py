"""The order of one step's storage operations (see :mod:`conformance.tracing`): checkpoints are
replaced by temp file, fsync, rename and directory fsync (§6.5, else ``durable``), and a graceful
shutdown writes a dir's clean-shutdown marker last (§6.3, else ``clean-restart``)."""

from __future__ import annotations

import re

from conformance import scenario as sc
from conformance.properties import CLEAN_RESTART, DURABLE
from conformance.verdicts import describe

CHECKPOINT_NAMES = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "leader-epoch-checkpoint")
MARKER = ".kafka_cleanshutdown"


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0]


def problem(step, ops) -> tuple[str, str] | None:
    """(property, witness) for the first rule ``ops`` (one step's operations) break, or None."""
    return _checkpoint_problem(step, ops) or (_marker_problem(ops) if isinstance(step, sc.Shutdown) else None)


# a broken promise's witness names the segment file and the recovery points (promise_problem's
# wording): what a finding's shape reads back (conformance.kafka_findings)
BROKEN_PROMISE = re.compile(r"/(?P<base>\d{20})\.log: the batches below the recovery point \d+ \(from (?P<start>\d+)\)")


def promise_problem(promises, storage, root: str) -> str | None:
    """durable: the first of the model's promises (:func:`model.durability.promised`) that
    ``storage`` (a SimStorage) does not keep, its durable state against what it holds now."""
    if not promises:
        return None
    now, durable = storage.image(), storage.durable_image()
    for p in promises:
        path = f"{root}/{p.path}"
        held = now.get(path)
        if held is None or len(held) < p.length:
            continue  # what the target holds is judged by conforms; this judges what it made durable
        kept = durable.get(path)
        if kept is None:
            return (
                f"{p.path}: the batches below the recovery point {p.below} (from {p.start}) are in it, but a "
                "power loss now takes the file (its directory entry, or its directory's, is not durable)"
            )
        if kept[: p.length] != held[: p.length]:
            at = next((i for i, (a, b) in enumerate(zip(kept, held, strict=False)) if a != b), len(kept))
            return (
                f"{p.path}: the batches below the recovery point {p.below} (from {p.start}) end at byte "
                f"{p.length}, a power loss now keeps other bytes from byte {at}"
            )
    return None


def _checkpoint_problem(step, ops) -> tuple[str, str] | None:
    for i, op in enumerate(ops):
        if op.name in ("write", "truncate") and _base(op.path) in CHECKPOINT_NAMES:
            return (
                DURABLE,
                f"{_base(op.path)} in {_parent(op.path)} rewritten in place during {describe(step)}: "
                "a crash mid-write would tear it (§6.5: temp file, fsync, rename)",
            )
        if op.name == "rename" and _base(op.target) in CHECKPOINT_NAMES:
            last = next((o for o in reversed(ops[:i]) if o.path == op.path), None)
            if last is None or last.name != "fsync":
                return DURABLE, f"{op.path} renamed over {_base(op.target)} without an fsync first (§6.5 step 2)"
            if not any(o.name == "fsync_dir" and o.path == _parent(op.target) for o in ops[i + 1 :]):
                return DURABLE, f"rename to {op.target} not followed by an fsync of {_parent(op.target)} (§6.5 step 4)"
    return None


def _marker_problem(ops) -> tuple[str, str] | None:
    for i, op in enumerate(ops):
        if _base(op.path) != MARKER or op.name not in ("create", "write"):
            continue
        d = _parent(op.path)
        done = {o.target for o in ops[:i] if o.name == "rename"}
        missing = [n for n in (f"{d}/{n}" for n in CHECKPOINT_NAMES[:2]) if n not in done]
        if missing:
            return CLEAN_RESTART, f"clean-shutdown marker of {d} written before {_base(missing[0])} (§6.3: marker last)"
        late = [
            o for o in ops[i + 1 :] if o.path.startswith(d + "/") and _base(o.path) != MARKER and o.name != "unlink"
        ]
        if late:
            return (
                CLEAN_RESTART,
                f"clean-shutdown marker of {d} written before {late[0].name} of {late[0].path} (§6.3: marker last)",
            )
    return None
