"""The mutation results table: Parquet files under ``<out>/results/``, one per wave of mutant
batches, appended and never rewritten (a crash loses at most the wave in flight; a rerun skips the
mutants already there, by :func:`key`), as the campaign's table is (conformance/campaign/table.py)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema(
    [
        ("key", pa.string()), ("release", pa.string()), ("kafka_build", pa.string()), ("mutant", pa.string()),
        ("class", pa.string()), ("method", pa.string()), ("descriptor", pa.string()), ("line", pa.int64()),
        ("mutator", pa.string()), ("description", pa.string()), ("kafka_status", pa.string()),
        ("killing_test", pa.string()), ("suite_status", pa.string()), ("witness_case", pa.string()),
        ("witness", pa.string()), ("covering_cases", pa.int64()), ("cases_run", pa.int64()),
        ("suite_seconds", pa.float64()), ("hot_swap", pa.bool_()), ("kafka_io", pa.bool_()),
    ]
)  # fmt: skip
COLUMNS = tuple(SCHEMA.names)
# columns a results file written before them lacks, and what such a row holds
LATER = {"kafka_io": False}


class TableError(OSError):
    """The results folder holds something that is not a results file of ours."""


def key(mutant) -> str:
    """A mutant's identity across runs: PIT numbers mutants per run, this names what was mutated."""
    return f"{mutant.clazz}|{mutant.method}{mutant.descriptor}|{mutant.indexes}|{mutant.mutator}"


def append(folder: str, rows: list[dict], name: str) -> str:
    """``<folder>/<name>.parquet`` (written aside, then renamed: never half a file)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.parquet")
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA), path + ".tmp")
    os.replace(path + ".tmp", path)
    return path


def read(folder: str) -> list[dict]:
    if not os.path.isdir(folder):
        return []
    rows: list[dict] = []
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".parquet")):
        path = os.path.join(folder, name)
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise TableError(f"{path}: not a readable Parquet results file ({e})") from None
        missing = set(COLUMNS) - set(table.column_names) - set(LATER)
        if missing:
            raise TableError(f"{path}: not a mutation results file (no column {', '.join(sorted(missing))})")
        present = [c for c in COLUMNS if c in table.column_names]
        rows.extend({**LATER, **r} for r in table.select(present).to_pylist())
    return rows
