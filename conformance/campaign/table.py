"""The campaign results table: Parquet files under ``<out>/results/``, one per wave of tasks, appended
and never rewritten (a crash loses at most the wave in flight; rerunning skips the seeds already
there).  Columns: :data:`conformance.campaign.tasks.COLUMNS` (``kafka_build``, the digest of a
kafka target's jars, is null in a table written before it was kept).  Spark, pandas or pyarrow read the
folder as one table (``spark.read.parquet("<out>/results")``).
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.campaign.tasks import COLUMNS

_STRINGS = pa.list_(pa.string())
SCHEMA = pa.schema(
    [
        ("run_id", pa.string()), ("commit", pa.string()), ("seed", pa.int64()), ("profile", pa.string()),
        ("target", pa.string()), ("examples", pa.int64()), ("max_steps", pa.int64()), ("fault_kinds", _STRINGS),
        ("max_crashes", pa.int64()), ("status", pa.string()), ("property", pa.string()), ("signature", pa.string()),
        ("witness", pa.string()), ("steps", pa.string()), ("n_steps", pa.int64()), ("scenarios", pa.int64()),
        ("duration_s", pa.float64()), ("started_at", pa.float64()), ("finished_at", pa.float64()),
        ("branches", _STRINGS), ("fault_families", _STRINGS), ("db_key", pa.string()), ("choices", _STRINGS),
        ("error", pa.string()), ("kafka_build", pa.string()),
    ]
)  # fmt: skip
assert tuple(SCHEMA.names) == COLUMNS


class TableError(OSError):
    """The results folder holds something that is not a results file of ours."""


def results_dir(out: str) -> str:
    return os.path.join(out, "results")


def append(folder: str, rows: list[dict], name: str) -> str:
    """Write ``rows`` as ``<folder>/<name>.parquet`` (written aside, then renamed: never half a file)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.parquet")
    tmp = path + ".tmp"
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA), tmp)
    os.replace(tmp, path)
    return path


def read(folder: str) -> list[dict]:
    """Every row in the folder (none if it does not exist yet)."""
    if not os.path.isdir(folder):
        return []
    rows: list[dict] = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".parquet"):
            continue
        path = os.path.join(folder, name)
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise TableError(f"{path}: not a readable Parquet results file ({e})") from None
        if "kafka_build" not in table.column_names:  # written before builds were keyed: none named
            table = table.append_column("kafka_build", pa.nulls(table.num_rows, pa.string()))
        missing = set(COLUMNS) - set(table.column_names)
        if missing:
            raise TableError(f"{path}: not a campaign results file (no column {', '.join(sorted(missing))})")
        rows.extend(table.select(list(COLUMNS)).to_pylist())
    return rows
