"""The model as a target: :mod:`model.log_manager` over an in-memory disk image."""

from __future__ import annotations

import model.errors
import model.log
import model.log_manager
from conformance import scenario as sc
from conformance.targets import TargetBase, partition_state
from model.config import Config


class ModelTarget(TargetBase):
    name = "model"
    trusts_its_index_files = True  # its index files are Kafka's (kafkas_own: index-trusted-after-a-fault)

    @staticmethod
    def refusals():
        return (model.log.LogError, model.errors.IndexFailure, model.errors.RecordFormatError)

    def __init__(self, scenario: sc.Scenario):
        super().__init__(scenario)
        self.config = Config.of(scenario.config)
        self.image: dict[str, bytes] = {}
        self.mtimes: dict[str, int] = {}
        self.directories: set[str] = set()
        self.manager: model.log_manager.LogManager | None = None

    def _open(self) -> list[dict]:
        self.manager = model.log_manager.load(
            self.image,
            self.dir_names,
            self.config,
            self.clock,
            self.jitter,
            self.directories,
            mtimes=self.mtimes,
            failure_policy=self.scenario.failure_policy,
            unique_ids=self.unique_ids,
            unassigned=self.unassigned,
        )
        on_disk = self.manager.directories()
        return [
            {"dir": o.data_dir, "partition": o.name, "error": o.error, "recovered": o.recovered}
            | ({"kind": o.kind} if o.kind else {})
            for o in self.manager.outcomes
            # the list is of the directories the load left: a -delete dir the startup's
            # kafka-delete-logs run removed (file.delete.delay.ms 0) is not in it
            if o.kind != "delete" or f"{o.data_dir}/{o.name}" in on_disk
        ]

    def _started(self) -> bool:
        return self.manager.startup_error is None

    def _startup_failed(self) -> None:
        self.image = self.manager.files()
        self.mtimes = self.manager.mtimes()
        self.directories = self.manager.directories()
        self.manager = None

    def _shutdown(self):
        outcome = {d: why is None for d, why in self.manager.shutdown().items()}
        self.image = self.manager.files()
        self.mtimes = self.manager.mtimes()
        self.directories = self.manager.directories()
        return outcome

    def _tick(self):
        self.manager.tick()

    def restore(self, files, directories, mtimes):
        self.halt()
        self.image = dict(files)
        self.directories = set(directories)
        self.mtimes = {p: ms for p, ms in mtimes.items() if p.endswith((".log", ".log.deleted", ".log.swap"))}

    def _segment_bytes(self):
        if not self.running:
            return {}
        return {
            f"{p.data_dir}/{topic}-{partition}": [bytes(s.log) for s in p.log.segments]
            for (topic, partition), p in self.manager.partitions.items()
        }

    def _call(self, step):
        return step.call(self.manager, self.dir_names)

    def kafkas_lookup_by_a_lost_max(self, step: sc.Step) -> dict | None:
        """Kafka's result for the lookup ``step`` just run, where a segment's max timestamp, as
        Kafka holds it, lies below its records' (lost at a truncation) and makes Kafka's answer differ
        from the model's (kafka_findings.LOOKUP_BY_A_LOST_MAX); None elsewhere."""
        return self._kafkas_lookup(step, lambda log: log.stale_max_timestamp())

    def kafkas_lookup_by_a_kept_max(self, step: sc.Step) -> dict | None:
        """The same where a segment's max timestamp, as Kafka holds it, lies above its records'
        (kept by a truncation from an entry past the cut: kafka_findings.LOOKUP_BY_A_KEPT_MAX)."""
        return self._kafkas_lookup(step, lambda log: log.kept_max_timestamp())

    def _kafkas_lookup(self, step: sc.Step, held_apart) -> dict | None:
        if not (self.running and isinstance(step, sc.OffsetForTimestamp)):
            return None
        files = self.manager.partitions.get((step.topic, step.partition))
        if files is None or not held_apart(files.log):
            return None
        kafkas = files.log.offset_for_timestamp_by_kafkas_max(step.timestamp)
        if kafkas == files.log.offset_for_timestamp(step.timestamp):
            return None
        return {"found": list(kafkas) if kafkas else None}

    def kafkas_retention_by_a_damaged_entry(self, step: sc.Step) -> dict | None:
        """Kafka's result for the retention ``step`` just run, where it trusts a damaged final
        time-index entry the model does not (kafka_findings.RETENTION_BY_A_DAMAGED_ENTRY); None elsewhere."""
        if not (self.running and isinstance(step, sc.Retention)) or self.manager.kafkas_retention is None:
            return None
        return self.manager.kafkas_retention

    def state(self) -> dict:
        if not self.running:
            return {"running": False}
        parts = {}
        for (topic, partition), p in sorted(self.manager.partitions.items()):
            log = p.log
            segs = [(s.base_offset, s.size, bytes(s.log)) for s in log.segments]
            parts[f"{p.data_dir}/{topic}-{partition}"] = partition_state(
                log.log_start_offset, log.log_end_offset, log.recovery_point, segs, log.epochs,
                log.producer_state.producers.values(),
            )  # fmt: skip
        return {"running": True, "partitions": parts}

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        return dict(self.manager.files(indexes)) if self.running else dict(self.image)

    def index_entries(self) -> dict:
        out = {}
        if not self.running:
            return out
        for (topic, partition), p in self.manager.partitions.items():
            for i, s in enumerate(p.log.segments):
                out[f"{p.data_dir}/{topic}-{partition}/{s.base_offset}"] = (
                    s.offset_index.logical_entries(),
                    s.time_index.logical_entries(),
                    bytes(s.log),
                    i == len(p.log.segments) - 1,
                    p.log.segments[i + 1].base_offset if i + 1 < len(p.log.segments) else p.log.log_end_offset,
                )
        return out

    def close(self) -> None:
        pass
