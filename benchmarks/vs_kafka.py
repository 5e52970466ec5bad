"""impl against Kafka 4.4.0's own classes on the same files, as ratios of interleaved pairs.

    python -m benchmarks.vs_kafka [--repeat N] [--segment-mib N] [--only recover|load|bytes] [--json]

Three figures, each side on exactly the same bytes in the same run:

* **recover**: ``impl.segment.LogSegment.recover`` against Kafka's ``LogSegment.recover`` of one
  segment file, at 1 KiB, 16 KiB and 1 MiB batches, without and with a producer id on every batch
  (idempotent producers, Kafka's default since 3.0).  Both sides start each call from the trimmed
  indexes a clean close leaves and a leader-epoch checkpoint holding the segment's epoch, both
  follow the producers (impl: ``recover`` and then its loader's ``ProducerStateManager.read`` of
  each producer batch, which is what Kafka's ``recover`` does inside), and the clock covers the
  call only: Python's ``perf_counter`` around impl's, the JVM's ``System.nanoTime`` around
  Kafka's.  Kafka runs in its own JVM (``klc.kafka.Bench``, kafka-target/) started once with a
  broker's flags (or ``--jvm-flags adapter``: the kafka target's) and warmed by ``--warmup`` calls
  per shape first.  One call of ``crc32c`` over the whole segment is timed in the same pairs:
  ``impl / one crc32c call`` is the fraction of raw checksum speed impl's recovery reaches.
  Every call's result is checked (nothing truncated, the entries and producers expected).  The
  file lies in the temporary directory's file system, as ``benchmarks.recovery``'s (in the page
  cache: on tmpfs impl's mapping of it faults 4 KiB pages and costs ~2x more here).
* **load**: ``klc load``'s load (impl's ``LogManager`` construction and ``startup``) against
  Kafka's own ``LogManager`` construction and ``startup``, each on a fresh copy of the same data
  dir on tmpfs (``/dev/shm``, written outside the clock): a crashed dir (``benchmarks.unclean``'s,
  no clean-shutdown marker, recovery points mid-log, torn tails, missing indexes) and the clean
  dir impl's graceful shutdown of it leaves.  The JVM's start (to its first answer) is reported
  apart and is in neither side's time.
* **bytes**: log bytes read by the load of the crashed dir, impl and Kafka 2.2.2, 2.3.1 and 4.4.0
  (each release in the kafka target's adapter, kafka-target-scala/ for 2.x).  One definition for
  both sides: **the sum, over every ``LogSegment.recover`` call the load makes, of the segment's
  ``.log`` size when the call begins** — a recovery reads its segment from byte 0 to its end (or to
  the first invalid batch, and the rest is truncated unread), so a segment recovered twice counts
  twice.  Reads outside recovery (the active segment's tail for the next offset, the producer
  state's rebuild) count on neither side.  Kafka's calls are seen by the adapter's advice on
  ``LogSegment.recover`` (``Recoveries.java``), impl's from its load report (each segment it
  scanned, at its size before the load).  Given over the bytes of the segments from the recovery
  point's on, and over the bytes at and after the recovery point.

Ratios are ``Kafka / impl`` (> 1: impl is faster or reads less); each is taken per pair, the
minimum and median reported.  Nothing here is a test; figures taken on a loaded machine move
(the load average is printed).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from crc32c import crc32c

import impl.segment
from benchmarks import recovery, unclean
from benchmarks.segments import build_segment
from impl.config import LogConfig
from impl.producer_state import ProducerStateManager

MIB = 1024 * 1024
SHAPES = {"1k": (1024, 4), "16k": (16 * 1024, 16), "1m": (MIB, 64)}
PRODUCER_ID = 4711
RELEASES = ("2.2.2", "2.3.1", "4.4.0")
# bin/kafka-server-start.sh's heap and kafka-run-class.sh's performance options
BROKER_FLAGS = ("-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                "-Djava.awt.headless=true")  # fmt: skip


def _tmpfs() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def _ratios(kafka: list[float], impl_: list[float]) -> dict:
    per_pair = [k / i for k, i in zip(kafka, impl_, strict=True)]
    return {
        "kafka_over_impl_min": min(per_pair),
        "kafka_over_impl_median": statistics.median(per_pair),
        "impl_median_s": statistics.median(impl_),
        "kafka_median_s": statistics.median(kafka),
        "pairs": len(per_pair),
    }


class BenchJvm:
    """Kafka's side: ``klc.kafka.Bench`` in a JVM of its own, JSON lines on its stdin/stdout."""

    def __init__(self, flags: str):
        from conformance.targets import kafka_jvm

        classpath = kafka_jvm.build_for(None)
        options = BROKER_FLAGS if flags == "broker" else kafka_jvm.JVM_OPTIONS
        java = shutil.which("java")
        if java is None:
            raise SystemExit("benchmarks.vs_kafka: 'java' is not on PATH (Java 17+ needed for Kafka's side)")
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [java, *options, "-cp", classpath, "klc.kafka.Bench"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.version = self.request({"op": "hello"})["kafka"]
        self.start_s = time.perf_counter() - started
        self.flags = list(options)

    def request(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"Kafka's benchmark JVM died (exit {self.proc.wait()}) on {req['op']}")
        answer = json.loads(line)
        if "ok" not in answer:
            raise RuntimeError(f"Kafka's benchmark JVM: {answer}")
        return answer["ok"]

    def stop(self) -> None:
        try:
            self.request({"op": "quit"})
        except (RuntimeError, OSError):
            pass
        self.proc.kill()
        self.proc.wait()


# --- recover -------------------------------------------------------------------------------------


class ImplRecovery(recovery.RecoveryDir):
    """benchmarks.recovery's staged recovery, with the producers followed as Kafka's recover does."""

    def prepare(self):
        segment, cache = super().prepare()
        return segment, cache, ProducerStateManager(self.storage, self.dir)

    @staticmethod
    def run(state):
        segment, cache, psm = state
        before = segment.storage.stats.log_bytes_read
        truncated = segment.recover(cache)
        for header, marker in segment.recovered_producers:
            psm.read(header, marker, segment.txn_index)
        if segment.recovered_map_end is not None:
            psm.update_map_end(segment.recovered_map_end)
        return segment, cache, truncated, before, len(psm.producers)


def _timed_impl(rd: ImplRecovery, producers: int) -> float:
    state = rd.prepare()
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        result = rd.run(state)
        seconds = time.perf_counter() - t0
    finally:
        gc.enable()
    if result[4] != producers:
        raise RuntimeError(f"impl followed {result[4]} producers, expected {producers}")
    rd.finish(result[:4])
    return seconds


def _timed_kafka(jvm: BenchJvm, rd: ImplRecovery, producers: int) -> float:
    rd._write(".index", rd.expected.offset_index)
    rd._write(".timeindex", rd.expected.time_index)
    answer = jvm.request({"op": "recover", "dir": rd.dir})
    want = {"truncated": 0, "offset_entries": rd.expected.offset_entries,
            "time_entries": rd.expected.time_entries, "producers": producers, "size": len(rd.segment.data)}  # fmt: skip
    got = {k: answer[k] for k in want}
    if got != want:
        raise RuntimeError(f"Kafka's recover of the {rd.segment.label} segment: {got}, expected {want}")
    return answer["ns"] / 1e9


def _timed_crc(data: bytes) -> float:
    t0 = time.perf_counter()
    crc32c(data)
    return time.perf_counter() - t0


def recover_figures(jvm: BenchJvm, args) -> dict:
    out = {}
    for shape in args.shapes:
        batch_bytes, records = SHAPES[shape]
        for with_pid in (False, True):
            label = f"{shape}{'+pid' if with_pid else ''}"
            segment = build_segment(label, int(args.segment_mib * MIB), batch_bytes, records,
                                    producer_id=PRODUCER_ID if with_pid else None)  # fmt: skip
            producers = 1 if with_pid else 0
            with tempfile.TemporaryDirectory(prefix="klc-vs-kafka-") as tmp:  # as benchmarks.recovery's
                rd = ImplRecovery(tmp, segment, LogConfig())
                for _ in range(args.warmup):
                    _timed_kafka(jvm, rd, producers)
                _timed_impl(rd, producers)
                impl_s, kafka_s, crc_s = [], [], []
                for i in range(args.repeat):  # interleaved, the order alternating
                    if i % 2:
                        kafka_s.append(_timed_kafka(jvm, rd, producers))
                        impl_s.append(_timed_impl(rd, producers))
                    else:
                        impl_s.append(_timed_impl(rd, producers))
                        kafka_s.append(_timed_kafka(jvm, rd, producers))
                    crc_s.append(_timed_crc(segment.data))
            fig = _ratios(kafka_s, impl_s)
            over_crc = [c / i for c, i in zip(crc_s, impl_s, strict=True)]
            fig |= {
                "batches": segment.batches,
                "bytes": len(segment.data),
                "impl_over_one_crc_call_median": statistics.median(over_crc),
                "impl_over_one_crc_call_max": max(over_crc),
                "impl_over_one_crc_call_min": min(over_crc),
                "impl_ns_per_batch": statistics.median(impl_s) / segment.batches * 1e9,
                "kafka_ns_per_batch": statistics.median(kafka_s) / segment.batches * 1e9,
            }
            out[label] = fig
            _progress(f"recover {label}: Kafka/impl median {fig['kafka_over_impl_median']:.2f} "
                      f"(min {fig['kafka_over_impl_min']:.2f}), impl/one crc32c call {fig['impl_over_one_crc_call_median']:.2f}")  # fmt: skip
    return out


# --- load ----------------------------------------------------------------------------------------


def _impl_load(root: str, threads: int) -> tuple:
    seconds, loads, manager, storage = unclean.timed_startup(root, threads, lambda: int(time.time() * 1000))
    return seconds, len(manager.logs), loads, manager, storage


def _clean_files(layout: unclean.Layout, work: str) -> dict:
    """The dir impl's graceful shutdown leaves after loading ``layout``: path → (bytes, size)."""
    root = tempfile.mkdtemp(dir=work)
    unclean.write(layout, root)
    _, _, _, manager, storage = _impl_load(root, 1)
    manager.shutdown()
    storage.close_all()
    files = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            path = os.path.join(dirpath, n)
            with open(path, "rb") as f:
                data = f.read()
            files[os.path.relpath(path, root)] = (data, len(data))
    shutil.rmtree(root)
    return files


def _write_files(files: dict, directories, root: str) -> None:
    unclean.write(unclean.Layout(files, tuple(directories), 0, 0, 0, 0, ()), root)


def load_figures(jvm: BenchJvm, args) -> dict:
    layout = unclean.build(args.load_partitions, args.load_segments, int(args.load_segment_mib * MIB))
    out = {"jvm_start_s": jvm.start_s}
    with tempfile.TemporaryDirectory(prefix="klc-vs-kafka-load-", dir=_tmpfs()) as work:
        dirs = {"crashed": layout.files, "clean": _clean_files(layout, work)}
        for name, files in dirs.items():

            def impl_once() -> float:
                root = tempfile.mkdtemp(dir=work)
                _write_files(files, layout.directories, root)
                seconds, loaded, _, manager, storage = _impl_load(root, args.threads)
                for log in manager.logs.values():
                    log.close_handlers()
                storage.close_all()
                shutil.rmtree(root)
                if loaded != layout.partitions:
                    raise RuntimeError(f"impl loaded {loaded} of {layout.partitions} partitions ({name} dir)")
                return seconds

            def kafka_once() -> float:
                root = tempfile.mkdtemp(dir=work)
                _write_files(files, layout.directories, root)
                answer = jvm.request({"op": "load", "dirs": [os.path.join(root, "d0")], "threads": args.threads})
                shutil.rmtree(root)
                if answer["partitions"] != layout.partitions:
                    raise RuntimeError(f"Kafka loaded {answer['partitions']} of {layout.partitions} partitions ({name} dir)")
                return answer["ns"] / 1e9

            for _ in range(args.warmup):
                kafka_once()
            impl_once()
            impl_s, kafka_s = [], []
            for i in range(args.load_repeat):
                pair = (kafka_once, impl_once) if i % 2 else (impl_once, kafka_once)
                first, second = pair[0](), pair[1]()
                k, m = (first, second) if i % 2 else (second, first)
                kafka_s.append(k)
                impl_s.append(m)
            out[name] = _ratios(kafka_s, impl_s)
            _progress(f"load {name}: Kafka/impl median {out[name]['kafka_over_impl_median']:.2f} "
                      f"(min {out[name]['kafka_over_impl_min']:.2f})")  # fmt: skip
    out |= {"partitions": layout.partitions, "segments": args.load_segments, "segment_mib": args.load_segment_mib,
            "log_bytes": layout.log_bytes, "threads": args.threads}  # fmt: skip
    return out


# --- bytes read ----------------------------------------------------------------------------------


def _impl_bytes(layout: unclean.Layout, work: str) -> int:
    root = tempfile.mkdtemp(dir=work)
    unclean.write(layout, root)
    _, _, loads, manager, storage = _impl_load(root, 1)
    total = 0
    for load in loads:
        part = os.path.relpath(os.path.join("d0", load.name))
        for base in load.report.scanned_segments:
            total += layout.files[f"{part}/{base:020d}.log"][1]
    for log in manager.logs.values():
        log.close_handlers()
    storage.close_all()
    shutil.rmtree(root)
    return total


def _kafka_bytes(layout: unclean.Layout, work: str, release: str) -> int:
    from conformance.targets import kafka_jvm

    root = tempfile.mkdtemp(dir=work)
    unclean.write(layout, root)
    jvm = kafka_jvm.Jvm(kafka_jvm.build_for(release))
    try:
        for req in ({"op": "configure", "root": root, "data_dirs": ["d0"], "config": {}, "clock_ms": int(time.time() * 1000)},
                    {"op": "open"}):  # fmt: skip
            answer = jvm.request(req)
            if "ok" not in answer:
                raise RuntimeError(f"Kafka {release}'s {req['op']}: {answer}")
        loaded = answer["ok"]["loaded"]
        if len(loaded) != layout.partitions or any(x["error"] for x in loaded):
            raise RuntimeError(f"Kafka {release} did not load every partition: {loaded}")
        jvm.request({"op": "halt"})
        return sum(x["recovered_bytes"] for x in loaded)
    finally:
        jvm.stop()
        shutil.rmtree(root, ignore_errors=True)


def bytes_figures(args) -> dict:
    layout = unclean.build(args.bytes_partitions, 4, int(args.load_segment_mib * MIB))
    out = {"definition": "sum over LogSegment.recover calls of the .log size when the call begins",
           "from_rp_segment_bytes": layout.from_rp_segment_bytes, "after_rp_bytes": layout.after_rp_bytes,
           "model_count_of_kafkas_algorithm": unclean.model_bytes_read(layout)[0], "read": {}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="klc-vs-kafka-bytes-", dir=_tmpfs()) as work:
        out["read"]["impl"] = _impl_bytes(layout, work)
        for release in args.releases:
            out["read"][release] = _kafka_bytes(layout, work, release)
    out["over_from_rp_segments"] = {k: v / layout.from_rp_segment_bytes for k, v in out["read"].items()}
    out["over_after_rp"] = {k: v / layout.after_rp_bytes for k, v in out["read"].items()}
    for k, v in out["over_from_rp_segments"].items():
        _progress(f"bytes read {k}: {v:.3f} x the segments from the recovery point's on")
    return out


# --- the run -------------------------------------------------------------------------------------


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vs_kafka", description=__doc__.split("\n\n")[0],
                                epilog="Figures: benchmarks/README.md, 'impl against Kafka's own classes'.")  # fmt: skip
    p.add_argument("--only", choices=("recover", "load", "bytes"), action="append", help="run only these figures (repeatable)")
    p.add_argument("--repeat", type=_positive, default=9, help="interleaved pairs per recover figure (9)")
    p.add_argument("--warmup", type=_positive, default=5, help="untimed Kafka calls per figure first, for the JIT (5)")
    p.add_argument("--segment-mib", type=_positive_float, default=16.0, help="the recovered segment's size (16)")
    p.add_argument("--shapes", nargs="+", choices=tuple(SHAPES), default=list(SHAPES), help="batch sizes (all)")
    p.add_argument("--jvm-flags", choices=("broker", "adapter"), default="broker",
                   help="Kafka's JVM: a broker's flags (G1, 1 GiB heap; default) or the kafka target's (C1 only)")  # fmt: skip
    p.add_argument("--load-partitions", type=_positive, default=200, help="partitions of the loaded dir (200)")
    p.add_argument("--load-segments", type=_at_least_two, default=2, help="segments per partition (2)")
    p.add_argument("--load-segment-mib", type=_positive_float, default=0.25, help="segment size (0.25)")
    p.add_argument("--load-repeat", type=_positive, default=5, help="interleaved pairs per load figure (5)")
    p.add_argument("--threads", type=_positive, default=1, help="num.recovery.threads.per.data.dir, both sides (1)")
    p.add_argument("--bytes-partitions", type=_positive, default=12, help="partitions of the dir whose bytes read are counted (12)")
    p.add_argument("--releases", nargs="+", default=list(RELEASES), help="Kafka releases counted (2.2.2 2.3.1 4.4.0)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    return p


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _at_least_two(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2 (the recovery point lies in a middle segment), not {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def main(argv: list[str] | None = None) -> dict:
    args = parser().parse_args(argv)
    only = set(args.only or ("recover", "load", "bytes"))
    began = time.perf_counter()
    result = {
        "environment": {"load_average": os.getloadavg(), "cpus": os.cpu_count(), "compiled_walk": impl.segment.COMPILED_WALK,
                        "tmpfs": _tmpfs()},  # fmt: skip
        "parameters": vars(args),
    }
    if only & {"recover", "load"}:
        jvm = BenchJvm(args.jvm_flags)
        result["kafka"] = {"version": jvm.version, "jvm_flags": jvm.flags, "jvm_start_s": jvm.start_s}
        try:
            if "recover" in only:
                result["recover"] = recover_figures(jvm, args)
            if "load" in only:
                result["load"] = load_figures(jvm, args)
        finally:
            jvm.stop()
    if "bytes" in only:
        result["bytes"] = bytes_figures(args)
    result["environment"]["load_average_after"] = os.getloadavg()
    result["elapsed_s"] = time.perf_counter() - began
    print(json.dumps(result, indent=1) if args.json else table(result))
    return result


def table(r: dict) -> str:
    env = r["environment"]
    lines = [f"impl vs Kafka {r.get('kafka', {}).get('version', '')} — load average {env['load_average'][0]:.2f} "
             f"before, {env['load_average_after'][0]:.2f} after; compiled walk: {env['compiled_walk']}"]  # fmt: skip
    if "kafka" in r:
        lines.append(f"Kafka's JVM started in {r['kafka']['jvm_start_s']:.2f} s (in neither side's time)")
    for label, f in r.get("recover", {}).items():
        lines.append(
            f"recover {label:8} {f['batches']:6} batches  Kafka/impl median {f['kafka_over_impl_median']:5.2f} "
            f"min {f['kafka_over_impl_min']:5.2f}   impl/one crc32c call {f['impl_over_one_crc_call_median']:.2f}   "
            f"impl {f['impl_ns_per_batch']:7.0f} ns/batch  Kafka {f['kafka_ns_per_batch']:7.0f} ns/batch"
        )
    load = r.get("load")
    if load:
        for name in ("crashed", "clean"):
            f = load[name]
            lines.append(
                f"load {name:8} {load['partitions']} partitions  Kafka/impl median {f['kafka_over_impl_median']:5.2f} "
                f"min {f['kafka_over_impl_min']:5.2f}   impl {f['impl_median_s'] * 1e3:7.1f} ms  Kafka {f['kafka_median_s'] * 1e3:7.1f} ms"
            )
    b = r.get("bytes")
    if b:
        lines.append(f"log bytes read by recover calls (model's count of Kafka's algorithm: {b['model_count_of_kafkas_algorithm']})")
        for k, v in b["read"].items():
            lines.append(f"  {k:6} {v:>10}  {b['over_from_rp_segments'][k]:.3f} x segments from the rp's on  "
                         f"{b['over_after_rp'][k]:.3f} x bytes at+after the rp")  # fmt: skip
    lines.append(f"elapsed {r['elapsed_s']:.0f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
