"""What a restart would discard, and the verdict ``klc load`` exits with (docs/load.md, "Exit
status").

The facts come from two sides of the load: the operator's dir as it is (never written: segment
sizes, the batches framed in what the load cut away, producer snapshots, the high watermark
checkpoint) and the log the load left (log end, segments, sizes).  Both targets give the second,
so impl's and Kafka's loads are judged alike.

Acknowledged means at or below the high watermark the broker last checkpointed
(``replication-offset-checkpoint``: what every in-sync replica had, so what an ``acks=all``
producer was told is written).  Kafka checkpoints it every
``replica.high.watermark.checkpoint.interval.ms`` (5 s by default), so writes acknowledged in the
last interval before the crash are above it: the verdict is a lower bound.  A partition with no
high watermark checkpointed counts every discarded record as acknowledged (nothing shows otherwise).
"""

from __future__ import annotations

import os

from impl.checkpoints import CheckpointError, parse_offsets
from impl.file_records import BatchScan
from impl.names import offset_from_file_name
from operator_tools import files

HW_CHECKPOINT = "replication-offset-checkpoint"

# exit statuses of `klc load`, the first that applies in this order (docs/load.md)
WOULD_NOT_START = 5  # a partition's load throws or a log dir goes offline: the broker does not start
ACKNOWLEDGED_LOST = 4  # the log end falls below the checkpointed high watermark, or records at or below it go
INCOMPLETE = 1  # something was not copied or is not a log dir: no verdict on what was not seen
UNACKNOWLEDGED_LOST = 3  # records discarded, all above the checkpointed high watermark
NOTHING_LOST = 0  # no record discarded (torn or zeroed bytes holding no batch may be cut)

VERDICTS = {
    WOULD_NOT_START: "the broker would not start",
    ACKNOWLEDGED_LOST: "the restart would lose acknowledged records",
    INCOMPLETE: "incomplete: not everything was copied or loaded, no verdict on the rest",
    UNACKNOWLEDGED_LOST: "the restart would discard records above the high watermark (none acknowledged)",
    NOTHING_LOST: "the broker would start and discard no record",
}


def high_watermarks(d: str) -> tuple[dict[tuple[str, int], int], str | None]:
    """The dir's checkpointed high watermarks, and a warning when the file cannot be read."""
    path = os.path.join(d, HW_CHECKPOINT)
    try:
        return parse_offsets(files.read(path, 1 << 26), path), None
    except FileNotFoundError:
        return {}, None
    except (OSError, CheckpointError) as e:
        return {}, f"{path}: {e}: high watermarks unknown, every discarded record counts as acknowledged"


def _segment_files(part: str) -> tuple[dict[int, str], list[int]]:
    """The partition dir's ``.log`` files by base offset, and its producer snapshots' offsets."""
    logs, snapshots = {}, []
    try:
        names = os.listdir(part)
    except OSError:
        return logs, snapshots
    for name in names:
        for suffix, into in ((".log", logs), (".snapshot", snapshots)):
            # a FIFO or a device named like a segment was not copied (a problem line says so)
            if name.endswith(suffix) and os.path.isfile(os.path.join(part, name)):
                try:
                    offset = offset_from_file_name(name)
                except Exception:  # a bad name fails the load itself, which says so
                    continue
                if into is logs:
                    logs[offset] = os.path.join(part, name)
                else:
                    snapshots.append(offset)
    return logs, sorted(snapshots)


def framed_records(path: str, start: int, end: int | None = None) -> tuple[int, int | None]:
    """(records, highest offset + 1) of the batches that can be framed in ``path[start:end]``,
    CRCs unchecked (what the load cut away is what failed a check): a v2 batch counts its records,
    a legacy message (perhaps a compressed wrapper) one.  Bytes that frame no batch count none."""
    try:
        whole = files.view(path)
    except OSError:
        return 0, None
    try:
        records, after = 0, None
        if len(whole) > start:
            for h in BatchScan(whole, start, end, check_crc=False):
                records += max(h.records_count, 1) if h.magic >= 2 else 1
                after = max(after or 0, h.last_offset + 1)
        return records, after
    finally:
        if hasattr(whole, "close"):
            whole.close()


def discarded(original: str, entry: dict, hw: int | None) -> dict:
    """What the load of the partition at ``original`` discarded, from its loaded ``entry``."""
    logs, snapshots = _segment_files(original)
    after = {s["base_offset"]: s["size"] for s in entry["segments"]}
    log_end = entry["log_end_offset"]
    out = {"high_watermark": hw, "truncated_records": 0, "deleted_segments": [], "deleted_records": 0}
    lost_after = None
    for base, path in sorted(logs.items()):
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        if base in after and after[base] < size:
            records, end = framed_records(path, after[base])
            out["truncated_records"] += records
        elif base not in after and base >= log_end:  # a whole segment above the new log end
            records, end = framed_records(path, 0)
            out["deleted_segments"].append(base)
            out["deleted_records"] += records
        else:
            continue
        if end is not None:
            lost_after = max(lost_after or 0, end)
    out["snapshots_dropped"] = [o for o in snapshots if o > log_end]  # producer state past the new log end
    records = out["truncated_records"] + out["deleted_records"]
    out["records_discarded"] = records
    # offsets gone: from the new log end to the highest offset seen in what was cut (a lower bound)
    out["offsets_lost"] = [log_end, lost_after] if lost_after is not None and lost_after > log_end else None
    if hw is not None and log_end < hw:
        out["verdict"] = "acknowledged"
        out["acknowledged_records_lost"] = hw - log_end
    elif records and hw is None:
        out["verdict"] = "acknowledged"
        out["acknowledged_records_lost"] = records
    elif records:
        out["verdict"] = "unacknowledged"
        out["acknowledged_records_lost"] = 0
    else:
        out["verdict"] = "nothing"
        out["acknowledged_records_lost"] = 0
    return out


def judge(report: dict, hws: dict[str, dict[tuple[str, int], int]]) -> None:
    """Add each loaded partition's ``discarded`` and the report's ``restart`` verdict (in place).
    ``hws``: per original dir, its checkpointed high watermarks."""
    totals = {"records_discarded": 0, "bytes_truncated": 0, "acknowledged_records_lost": 0, "segments_deleted": 0}
    kinds = set()
    for p in report["partitions"]:
        if p["error"] or "segments" not in p:
            continue
        hw = hws.get(p["dir"], {}).get((p["topic"], p["partition"]))
        d = discarded(os.path.join(p["dir"], p["name"]), p, hw)
        d["bytes_truncated"] = p.get("truncated_bytes", 0)
        p["discarded"] = d
        kinds.add(d["verdict"])
        totals["records_discarded"] += d["records_discarded"]
        totals["bytes_truncated"] += d["bytes_truncated"]
        totals["acknowledged_records_lost"] += d["acknowledged_records_lost"]
        totals["segments_deleted"] += len(d["deleted_segments"])
    held = any(d.get("held_by") is not None for d in report["dirs"])  # a live broker's lock (dir_lock)
    if held or report.get("startup_error") or any(p["error"] for p in report["partitions"]):
        status = WOULD_NOT_START
    elif "acknowledged" in kinds:
        status = ACKNOWLEDGED_LOST
    elif report["problems"] or any(p.get("not_copied") for p in report["partitions"]):
        status = INCOMPLETE
    elif "unacknowledged" in kinds:
        status = UNACKNOWLEDGED_LOST
    else:
        status = NOTHING_LOST
    report["restart"] = {"exit_status": status, "verdict": VERDICTS[status], **totals}


def partition_lines(p: dict) -> list[str]:
    """The text report's lines for what the restart discards of one partition (none: nothing)."""
    d = p.get("discarded")
    if not d or d["verdict"] == "nothing":
        return []
    parts = []
    if d["truncated_records"]:
        parts.append(f"{d['truncated_records']} records truncated")
    if d["deleted_segments"]:
        parts.append(f"segments {d['deleted_segments']} deleted ({d['deleted_records']} records)")
    if d["snapshots_dropped"]:
        parts.append(f"producer snapshots {d['snapshots_dropped']} dropped")
    if d["offsets_lost"]:
        parts.append(f"offsets {d['offsets_lost'][0]}..{d['offsets_lost'][1] - 1} gone")
    hw = d["high_watermark"]
    if d["verdict"] == "acknowledged":
        if hw is not None and p["log_end_offset"] < hw:
            why = (
                f"ACKNOWLEDGED DATA LOST: log end {p['log_end_offset']} below the high watermark {hw} "
                f"checkpointed ({d['acknowledged_records_lost']} acknowledged records)"
            )
        else:
            why = "ACKNOWLEDGED DATA LOST (no high watermark checkpointed: every discarded record counts)"
    else:
        why = f"discarded above the high watermark {hw} (none acknowledged)"
    return [f"  {why}" + (f": {', '.join(parts)}" if parts else "")]
