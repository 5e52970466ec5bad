"""``klc`` — the command line of kafka-log-conformance."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys

import attrs
import click

from conformance.mutants import MutantError, mutant_stack
from conformance.scenario import Scenario, ScenarioError
from conformance.targets.kafka_jvm import RELEASE, KafkaTargetError, NoAdapter, build, shared
from impl.config import ConfigError, LogConfig
from operator_tools.dump import DumpIOError, DumpOptions, check_regular_file, dump_file
from operator_tools.dump_decoders import DECODERS
from operator_tools.dump_index import INDEX_SUFFIXES, dump_index_file
from operator_tools.dump_state import STATE_FILES, dump_state_file


class _Klc(click.Group):
    """klc's group: a usage error is one line on stderr naming the command, exit status 2, in
    every command (click's own form is three lines, usage and a hint first)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else "klc"
            click.echo(f"{where}: {e.format_message()} (usage: {where} -h)", err=True)
            sys.exit(2)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)


def _refused(command: str, target: str, e: NoAdapter) -> None:
    """A --target kafka:VERSION no adapter runs: refused, exit status 2, in load and replay alike."""
    click.echo(f"klc {command}: --target {target} refused: {str(e).removeprefix('kafka target: ')}", err=True)
    sys.exit(2)


@click.group(cls=_Klc, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-log-conformance")
def main() -> None:
    """Reference model, implementation and conformance suite for Kafka's on-disk log layer."""


@main.command()
@click.argument("files", nargs=-1, required=True)  # each checked when dumped: one bad file fails only itself
@click.option("--deep-iteration", is_flag=True, help="Decode every record inside each batch.")
@click.option("--print-data-log", is_flag=True, help="Print keys and values (implies --deep-iteration).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line: per batch, per error, per file end.")
@click.option("--index-sanity-check", is_flag=True, help="Index files: print only Kafka's sanity-check verdict.")
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Index files: check the entries against the segment's .log, list mismatches.",
)
@click.option("--as-records", is_flag=True, help="Read every file as a record set (.log layout), whatever its name.")
@click.option(
    "--max-bytes",
    type=click.IntRange(min=0),
    metavar="N",
    help="Record files: read only the batches wholly within the first N bytes.",
)
@click.option(
    "--skip-record-metadata", is_flag=True, help="With --print-data-log: record lines show only key and payload."
)
@click.option(
    "--key-decoder",
    type=click.Choice(sorted(DECODERS)),
    help="How keys print: string (default), hex, long or int (implies --print-data-log).",
)
@click.option(
    "--value-decoder",
    type=click.Choice(sorted(DECODERS)),
    help="How values print: string (default), hex, long or int (implies --print-data-log).",
)
@click.option(
    "--offsets-decoder", "topic_decoders", flag_value="offsets", multiple=True,
    help="Decode records as __consumer_offsets records (implies --print-data-log).",
)  # fmt: skip
@click.option(
    "--transaction-log-decoder", "topic_decoders", flag_value="transaction-log", multiple=True,
    help="Decode records as __transaction_state records (implies --print-data-log).",
)  # fmt: skip
@click.option(
    "--cluster-metadata-decoder", "topic_decoders", flag_value="cluster-metadata", multiple=True,
    help="Decode records as KRaft __cluster_metadata records (implies --print-data-log).",
)  # fmt: skip
@click.option(
    "--remote-log-metadata-decoder", "topic_decoders", flag_value="remote-log-metadata", multiple=True,
    help="Decode records as tiered storage's __remote_log_metadata records (implies --print-data-log).",
)  # fmt: skip
@click.option(
    "--share-group-state-decoder", "topic_decoders", flag_value="share-group-state", multiple=True,
    help="Decode records as __share_group_state records (implies --print-data-log).",
)  # fmt: skip
def dump(
    files: tuple[str, ...],
    deep_iteration: bool,
    print_data_log: bool,
    as_json: bool,
    index_sanity_check: bool,
    verify_index_only: bool,
    as_records: bool,
    max_bytes: int | None,
    skip_record_metadata: bool,
    key_decoder: str | None,
    value_decoder: str | None,
    topic_decoders: tuple[str, ...],
) -> None:
    """Print the files of a Kafka log dir by their kind: .log segments (and .records record sets,
    KRaft .checkpoint snapshots), .index, .timeindex and .txnindex files, producer .snapshot files,
    the offset and leader-epoch checkpoints, partition.metadata, meta.properties and quorum-state,
    also under a .deleted, .cleaned or .swap suffix.  Another name is refused unless --as-records.

    Invalid data is reported (valid prefix, then file, byte position and reason) with exit status
    0; the status is non-zero only for usage or I/O errors and for a file of no kind it knows.
    """
    if index_sanity_check and verify_index_only:
        raise click.UsageError("--index-sanity-check and --verify-index-only exclude each other")
    options = _dump_options(
        deep_iteration, print_data_log, as_json, index_sanity_check, verify_index_only, max_bytes,
        skip_record_metadata, key_decoder, value_decoder, topic_decoders,
    )  # fmt: skip
    out = sys.stdout
    failed = False
    try:
        for path, in_dir in _dump_paths(files):
            try:
                _dumper(path, as_records, in_dir)(path, options, lambda line, end="\n": out.write(line + end))
            except _Skipped as e:
                out.flush()
                click.echo(f"klc dump: note: {e}", err=True)
            except DumpIOError as e:
                out.flush()
                click.echo(f"klc dump: {e}", err=True)
                failed = True
        out.flush()
    except BrokenPipeError:
        # The reader went away (`klc dump x.log | head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    if failed:
        sys.exit(1)


def _dump_options(
    deep_iteration, print_data_log, as_json, index_sanity_check, verify_index_only, max_bytes,
    skip_record_metadata, key_decoder, value_decoder, topic_decoders,
) -> DumpOptions:  # fmt: skip
    """The options of one ``klc dump`` run; a combination that means nothing is a usage error.  As
    in kafka-dump-log, any decoder implies --print-data-log, which implies --deep-iteration."""
    topics = sorted(set(topic_decoders))
    if len(topics) > 1:
        raise click.UsageError(f"--{topics[0]}-decoder and --{topics[1]}-decoder exclude each other")
    if topics and (key_decoder or value_decoder):
        raise click.UsageError(
            f"--{topics[0]}-decoder decodes keys and values: it excludes --key-decoder and --value-decoder"
        )
    print_data_log = print_data_log or bool(topics) or bool(key_decoder or value_decoder)
    if skip_record_metadata and not print_data_log:
        raise click.UsageError(
            "--skip-record-metadata goes with --print-data-log or a decoder (it keeps only the data)"
        )
    if skip_record_metadata and as_json:
        raise click.UsageError("--skip-record-metadata is for the text output (JSON consumers pick their fields)")
    return DumpOptions(
        deep_iteration, print_data_log, as_json, index_sanity_check, verify_index_only, max_bytes,
        skip_record_metadata, key_decoder or "string", value_decoder or "string", topics[0] if topics else None,
    )  # fmt: skip


RENAMED = (".deleted", ".cleaned", ".swap")  # Kafka's suffixes for a file being replaced or removed
RECORD_FILES = (".log", ".records", ".checkpoint")  # segments, record sets, KRaft snapshots


class _Skipped(DumpIOError):
    """A file met in a directory given to dump that is of no kind dump knows, or no regular file:
    said on stderr as a note, not an error (a log dir holds such files: a lock, a SOURCE.json)."""


def _dump_paths(args: tuple[str, ...]):
    """(path, whether it was found in a directory given) of every file to dump: a directory
    argument stands for every file under it, sorted by path, partition dirs included."""
    for arg in args:
        if not os.path.isdir(arg):
            yield arg, False
            continue
        found = []
        for dirpath, dirs, names in os.walk(arg, onerror=lambda e: found.append(e.filename)):
            dirs.sort()
            found += [os.path.join(dirpath, n) for n in names]
        for path in sorted(found):
            yield path, True


def _dumper(path: str, as_records: bool, in_dir: bool = False):
    """The dump of ``path``'s kind, by its name without a .deleted/.cleaned/.swap suffix."""
    try:
        check_regular_file(path)  # a directory or a FIFO is refused as such, whatever its name
    except DumpIOError as e:
        if in_dir and os.path.lexists(path) and os.access(path, os.F_OK):
            raise _Skipped(f"{e}, skipped") from None
        raise
    name = os.path.basename(path)
    for suffix in RENAMED:
        name = name.removesuffix(suffix)
    if as_records or name.endswith(RECORD_FILES):
        return dump_file
    if name.endswith(INDEX_SUFFIXES):
        return functools.partial(dump_index_file, name=name)
    if name.endswith(".snapshot") or name in STATE_FILES:
        return functools.partial(dump_state_file, name=name)
    if in_dir:
        raise _Skipped(f"{path}: not a kind of file klc dump knows, skipped")
    raise DumpIOError(
        f"cannot dump {path}: not a kind of file klc dump knows (.log, .records, .checkpoint, .index, "
        ".timeindex, .txnindex, .snapshot, the offset and leader-epoch checkpoints, partition.metadata, "
        "meta.properties, quorum-state, and those renamed .deleted, .cleaned or .swap); --as-records reads "
        "it as a record set"
    )


@main.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--target",
    default="both",
    show_default=True,
    callback=lambda ctx, param, value: _target_option(value),
    help="both: model against impl (checks conforms); kafka: model against Apache Kafka's own log layer "
    "(the pinned release; kafka:VERSION another one, docs/kafka-target.md); model or impl alone.",
)
@click.option("--backend", type=click.Choice(["sim", "os"]), default="sim", show_default=True, help="impl's storage.")
@click.option("--json", "as_json", is_flag=True, help="One JSON verdict per scenario, with every step's results.")
@click.option(
    "--mutant", metavar="NAME", help="Run impl with this mutant (tests/mutants) in place of the module it edits."
)
@click.option(
    "--kafka-classpath",
    metavar="PATH",
    help="With --target kafka: judge these jars (your own Kafka build) instead of the pinned release; "
    "they go before the pinned ones on the JVM's classpath.",
)
def replay(
    scenarios: tuple[str, ...],
    target: str,
    backend: str,
    as_json: bool,
    mutant: str | None,
    kafka_classpath: str | None,
) -> None:
    """Run scenario files (docs/scenario-format.md) through the runner and check every property.

    Exit status: 0 all passed, 1 a property was violated, 2 a file is not a valid scenario or the
    kafka target could not run, 3 nothing violated but not judged to the end (a target could not express
    a step, or the scenario reached a known Kafka bug: corpora/kafka-findings).
    """
    targets = {"both": ("model", "impl")}.get(target, ("model", target) if target.startswith("kafka") else (target,))
    if kafka_classpath:
        if not target.startswith("kafka"):
            raise click.BadParameter("goes with --target kafka", param_hint="--kafka-classpath")
        os.environ["KLC_KAFKA_CLASSPATH"] = _kafka_classpath(kafka_classpath)
    if target.startswith("kafka:"):
        try:  # the JVM the runner's kafka target will use (shared): a release with no adapter is refused here
            shared(os.environ.get("KLC_KAFKA_CLASSPATH") or None, target.partition(":")[2])
        except NoAdapter as e:
            _refused("replay", target, e)
        except KafkaTargetError as e:
            click.echo(f"klc replay: {e}", err=True)
            sys.exit(2)
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(mutant_stack(mutant))
    except MutantError as e:
        raise click.BadParameter(str(e), param_hint="--mutant") from None
    with stack:
        _replay(scenarios, targets, backend, as_json)


def _target_option(value: str) -> str:
    """--target of replay: both, model, impl, kafka or kafka:VERSION (MAJOR.MINOR.PATCH)."""
    if value in ("both", "model", "impl", "kafka"):
        return value
    if value.startswith("kafka:") and RELEASE.fullmatch(value.removeprefix("kafka:")):
        return value
    raise click.BadParameter(f"{value!r}: use both, model, impl, kafka or kafka:VERSION (e.g. kafka:2.8.2)")


def _load_target(value: str) -> str:
    """--target of load: impl, kafka or kafka:VERSION (MAJOR.MINOR.PATCH)."""
    if value in ("impl", "kafka") or (value.startswith("kafka:") and RELEASE.fullmatch(value.removeprefix("kafka:"))):
        return value
    raise click.BadParameter(f"{value!r}: use impl, kafka or kafka:VERSION (e.g. kafka:2.8.2)")


def _kafka_classpath(user: str) -> str:
    """The user's jars first, then the target's own build (its adapter and the pinned release)."""
    missing = [p for p in user.split(os.pathsep) if p and not os.path.exists(p.rstrip("*"))]
    if missing:
        raise click.BadParameter(f"{missing[0]}: no such file or directory", param_hint="--kafka-classpath")
    try:
        return os.pathsep.join([user, build()])
    except KafkaTargetError as e:
        click.echo(f"klc: {e}", err=True)
        sys.exit(2)


def _replay(scenarios: tuple[str, ...], targets: tuple[str, ...], backend: str, as_json: bool) -> None:
    from conformance.runner import run  # local: every property and target, +0.1 s on `klc dump` startup

    worst, replayed = 0, 0
    for path in scenarios:
        try:
            scenario = _scenario(path)
        except (ScenarioError, OSError) as e:
            click.echo(
                f"klc replay: {e}" if isinstance(e, ScenarioError) else f"klc replay: {path}: {e.strerror}", err=True
            )
            worst = 2
            continue
        if scenario is None:
            click.echo(f'klc replay: note: {path}: not a scenario (no "format": "klc-scenario"), skipped', err=True)
            continue
        replayed += 1
        try:
            verdict = run(scenario, targets, backend)
        except KafkaTargetError as e:
            click.echo(f"klc replay: {path}: {e}", err=True)
            sys.exit(2)
        if as_json:
            click.echo(json.dumps({"scenario": path} | verdict.to_json()))
        elif verdict.unsupported:
            click.echo(f"UNSUPPORTED {path}: {verdict.unsupported}")
        elif verdict.known:
            click.echo(f"KNOWN {path}: a known Kafka bug, not judged further: {verdict.known} (corpora/kafka-findings)")
        elif verdict.ok:
            checked = ", ".join(f"{k} {v}" for k, v in sorted(verdict.checked.items()))
            click.echo(
                f"PASS {path}: {len(scenario.steps)} steps on {' vs '.join(verdict.targets)} (checked: {checked})"
            )
        else:
            click.echo(f"FAIL {path}: {verdict.violations[0]}")
        if verdict.violations:
            worst = 2 if worst == 2 else 1
        elif (verdict.unsupported or verdict.known) and worst == 0:
            worst = 3
    if not replayed and worst == 0:
        click.echo("klc replay: none of the files is a scenario: nothing replayed", err=True)
        worst = 2
    sys.exit(worst)


def _scenario(path: str) -> Scenario | None:
    """The scenario in ``path``; None for a JSON document that does not claim to be one (a case
    folder's ``expected.json`` beside its ``scenario.json``).  A file that claims to be a scenario,
    or is no JSON at all, and is not a valid one raises ScenarioError."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Scenario.load(path)  # says where the JSON breaks
    if isinstance(data, dict) and "format" not in data and "steps" not in data:
        return None
    return Scenario.from_json(data, path)


@main.command()
@click.argument("cases", nargs=-1, type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--release",
    "releases",
    multiple=True,
    metavar="VERSION",
    help="A Kafka release to replay on (repeat it); default: the releases of issue 31's table.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per cell: case, release, verdict, witness, recorded."
)
def matrix(cases: tuple[str, ...], releases: tuple[str, ...], as_json: bool) -> None:
    """Replay the historical bugs' corpus cases (corpora/KAFKA-*, or the named CASES) on Kafka
    releases and print release x case: each cell the verdict (and the step of a failure), marked
    = where it is the verdict the case records for that release, ! where it differs.

    Exit status: 0 every recorded verdict holds, 1 one differs, 2 a bad argument or the kafka
    target could not run.  The first use of a release builds its adapter (Maven, docs/kafka-target.md).
    """
    from conformance import matrix as mx  # local: the runner and every target

    for r in releases:
        if not RELEASE.fullmatch(r):
            raise click.BadParameter(f"{r!r} is not a Kafka release (MAJOR.MINOR.PATCH)", param_hint="--release")
    try:
        chosen = mx.bug_cases(cases)
    except (ValueError, ScenarioError) as e:
        raise click.BadParameter(str(e), param_hint="CASES") from None
    releases = releases or mx.RELEASES

    def progress(case, release, cell):
        if as_json:
            click.echo(json.dumps({"case": case.name, "release": release, **attrs.asdict(cell)}))
        else:
            click.echo(f"{case.name} on {release}: {mx.short(cell)}", err=True)

    try:
        grid = mx.measure(chosen, releases, progress)
    except KafkaTargetError as e:
        click.echo(f"klc matrix: {e}", err=True)
        sys.exit(2)
    if not as_json:
        click.echo("\n".join(mx.render(grid, chosen, releases)))
    differing = [f"{n} on {r}: {c.verdict}, recorded {c.recorded}" for (n, r), c in grid.items() if not c.agrees]
    for line in differing:
        click.echo(f"klc matrix: differs from the recorded verdict: {line}", err=True)
    sys.exit(1 if differing else 0)


def _config_items(values: tuple[str, ...]) -> dict:
    parsed = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint="--config")
        parsed[key] = raw == "true" if raw in ("true", "false") else int(raw) if raw.lstrip("-").isdigit() else raw
    return parsed


def _config_option(values: tuple[str, ...]):
    parsed = _config_items(values)
    try:
        return LogConfig.from_dict(parsed)
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="--config") from None


@main.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="The whole report as one JSON object.")
@click.option("--config", "config_items", multiple=True, metavar="KEY=VALUE", help="A topic config (repeatable).")
@click.option(
    "--target",
    default="impl",
    show_default=True,
    callback=lambda ctx, param, value: _load_target(value),
    help="kafka: what Apache Kafka's own loader (the pinned release, or --kafka-classpath) does on restart; "
    "kafka:VERSION: that release's (docs/kafka-target.md lists the releases with an adapter).",
)
@click.option("--kafka-classpath", metavar="PATH", help="With --target kafka: your own Kafka build's jars.")
@click.option("--count-batches", is_flag=True, help="Also count every segment's batches (a CRC scan of all the data).")
def load(
    dirs: tuple[str, ...],
    as_json: bool,
    config_items: tuple[str, ...],
    target: str,
    kafka_classpath: str | None,
    count_batches: bool,
) -> None:
    """Load broker data dirs as a broker would and report every partition: log start and end
    offsets, recovery point, segments, what recovery did, what the restart would discard, and any
    error — a pre-flight check before restarting a broker (`klc load DIR && systemctl start kafka`).

    DIRS are never modified: the loader runs on a private (sparse) copy in TMPDIR.  Exit status, the
    first that applies: 5 the broker would not start (a partition NOT LOADED, STARTUP FAILS);
    4 acknowledged records would be lost (the log end falls below the checkpointed high watermark,
    or records go where no high watermark was checkpointed); 1 something was not copied or a DIR is
    not a log dir (no verdict on what was not seen); 3 records would be discarded, all above the high
    watermark; 0 the broker would start and discard no record.  2: bad arguments, the kafka target
    could not run, or the private copy did not fit in TMPDIR (no verdict).  docs/load.md.
    """
    from operator_tools.load_report import HostError, format_text  # local: impl log stack, slow

    try:
        report = _load_report(dirs, config_items, target, kafka_classpath, count_batches)
    except HostError as e:
        click.echo(f"klc load: {e}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        for line in format_text(report):
            click.echo(line)
    sys.exit(report["restart"]["exit_status"])


def _load_report(dirs, config_items, target, kafka_classpath, count_batches) -> dict:
    from operator_tools.load_report import load_dirs, load_dirs_on_kafka  # local: impl log stack, slow

    config = _config_option(config_items)
    if target.startswith("kafka"):
        release = target.partition(":")[2] or None
        if release and kafka_classpath:
            raise click.BadParameter(
                "goes with --target kafka (the jars are the release)", param_hint="--kafka-classpath"
            )
        try:
            classpath = _kafka_classpath(kafka_classpath) if kafka_classpath else None
            jvm = shared(classpath, release)
            return load_dirs_on_kafka(list(dirs), _config_items(config_items), jvm, count_batches)
        except NoAdapter as e:
            _refused("load", target, e)
        except KafkaTargetError as e:
            click.echo(f"klc load: {e}", err=True)
            sys.exit(2)
    elif kafka_classpath:
        raise click.BadParameter("goes with --target kafka", param_hint="--kafka-classpath")
    return load_dirs(list(dirs), config, count_batches)


@main.command()
@click.option(
    "--budget-seconds",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Time for the state machines, counted after the corpora; each runs at least one round (0: corpora only).",
)
@click.option("--json", "as_json", is_flag=True, help="The summary as JSON.")
def check(budget_seconds: float, as_json: bool) -> None:
    """The conformance gate: replay the corpora, run the state machines within the budget, print a
    per-property summary.  Exit status 1 on any violation."""
    from conformance.gate import run_gate  # local: Hypothesis state machines, slow for `klc dump` startup

    report = run_gate(budget_seconds, progress=lambda line: None if as_json else click.echo(line))
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        click.echo(f"checked ({report.seconds} s):")
        for prop, n in sorted(report.checked.items()):
            click.echo(f"  {prop:15} {n:8} checks")
        for name, n in report.machine_cases.items():
            click.echo(f"  {name}: {n} cases")
        click.echo("PASS: no property violated" if report.ok else "FAIL:")
        for v in report.violations:
            click.echo(f"  {v}")
        if report.known:
            click.echo("known open bugs (corpora/found, failing as recorded):")
            for v in report.known:
                click.echo(f"  {v}")
    sys.exit(0 if report.ok else 1)


@main.command()
@click.option(
    "--budget-minutes", type=float, help="Fuzz for this long (default: 1 minute when --scenarios is not given)."
)
@click.option("--scenarios", type=int, help="Fuzz this many scenarios (rounded up to whole tasks), then stop.")
@click.option(
    "--master", help="Spark master URL (spark://HOST:PORT, yarn, k8s://...); default: local mode, every core."
)
@click.option(
    "--profile",
    default="all",
    show_default=True,
    help="Fault profile: which fault kinds tasks may enable (all, power-loss, torn-writes, metadata, io-errors, corruption).",
)
@click.option(
    "--target",
    default="impl",
    show_default=True,
    help="impl (against the model), kafka (the model against Kafka's own log layer, docs/kafka-target.md), model, or mutant:NAME.",
)
@click.option(
    "--out",
    default="campaign-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Results table, report, findings.",
)
@click.option(
    "--corpus", "corpus_dir", type=click.Path(file_okay=False), help="Where new findings go (default: corpora/found)."
)
@click.option("--examples-per-task", default=20, show_default=True, type=int, help="Scenarios per task (one seed).")
@click.option("--steps", default=40, show_default=True, type=int, help="Stateful steps per scenario at most.")
@click.option(
    "--reproduce", "reproduce_attempts", default=3, show_default=True, type=int, help="Replays per new signature."
)
@click.option(
    "--executor",
    type=click.Choice(["spark", "processes"]),
    default="spark",
    show_default=True,
    help="processes: a local process pool instead of Spark (the benchmark baseline).",
)
@click.option(
    "--conf",
    "conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Spark property (repeatable): spark.executor.memory=4g, spark.yarn.queue=fuzz, spark.archives=venv.tar.gz#env.",
)
@click.option("--json", "as_json", is_flag=True, help="The summary as JSON.")
def campaign(budget_minutes, scenarios, master, profile, target, out, corpus_dir, examples_per_task, steps, reproduce_attempts, executor, conf, as_json) -> None:  # fmt: skip
    """A fuzzing campaign: the crash state machine as seed-addressed tasks on Spark (local mode by
    default), results appended to OUT/results (Parquet), new failures reproduced, shrunk, deduplicated
    and written to corpora/found/<signature>/, and a report in OUT/report.html.

    Rerunning skips the seeds already in the table for this commit, profile and target.  Exit status:
    0 no new failure (failures whose signature already has a corpus entry are counted, not new),
    1 a new signature or a harness error, 2 bad arguments, no Spark, an unreachable master, or a
    campaign Spark aborted (a task failed on every retry).
    """
    from conformance.campaign.driver import CampaignConfig, CampaignError, run_campaign  # local: Spark, Hypothesis

    config = CampaignConfig(
        out=out, budget_minutes=budget_minutes, scenarios=scenarios, master=master, profile=profile, target=target,
        examples_per_task=examples_per_task, steps=steps, corpus_dir=corpus_dir,
        reproduce_attempts=reproduce_attempts, executor=executor, conf=tuple(conf),
    )  # fmt: skip
    try:
        if as_json:
            result = run_campaign(config)
        else:
            with _CampaignUi() as ui:
                result = run_campaign(config, ui)
    except CampaignError as e:
        click.echo(f"klc campaign: {e}", err=True)
        sys.exit(2)
    failed = result.failures
    run = result.run
    if as_json:
        click.echo(json.dumps({
            "run_id": result.run_id, "tasks": len(result.rows), "scenarios": result.scenarios,
            "skipped_seeds": result.skipped, "failed_tasks": len(failed), "seconds": result.seconds,
            "fuzz_seconds": run["fuzz_s"], "scenarios_per_s": result.scenarios_per_s, "master": run["master"],
            "executors": run["executors"], "parallelism": result.parallelism, "findings": result.findings,
            "report": result.report,
        }, default=str))  # fmt: skip
    else:
        click.echo(
            f"{len(result.rows)} tasks, {result.scenarios} scenarios in a {run['fuzz_s']:.1f} s fuzz stage "
            f"({result.scenarios_per_s or 0:.2f} scenarios/s on {run['master']}: {run['executors']} executor(s), "
            f"{result.parallelism} cores; {result.seconds:.1f} s in all), {result.skipped} seeds already done; "
            f"{len(failed)} failed task(s), {len(result.findings)} new signature(s) "
            f"(the others are known: corpora/found)"
        )
        for f in result.findings:
            click.echo(
                f"  NEW {f['signature']}: {f['witness']}{' (flaky)' if f['flaky'] else ''} -> {f['corpus_path']}"
            )
        click.echo(f"report: {result.report}")
    errors = [r for r in failed if r["status"] == "error"]
    sys.exit(1 if result.findings or errors else 0)


class _CampaignUi:
    """A live progress bar on the driver (rich)."""

    def __enter__(self):
        from rich.progress import BarColumn, Progress, TextColumn  # rich: slow to import

        # the elapsed time shown is the fuzz stage's clock, the one the budget and the throughput
        # figure count (not rich's own, which would start before the first wave is submitted)
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f} {task.fields[unit]}"),
            TextColumn("{task.fields[elapsed]:.1f} s"), transient=False,
        )  # fmt: skip
        self.progress.__enter__()
        self.bar = None
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def start(self, total, unit) -> None:
        self.bar = self.progress.add_task("fuzz", total=total, unit=unit, elapsed=0.0)

    def advance_to(self, n, elapsed_s) -> None:
        self.progress.update(self.bar, completed=n, elapsed=elapsed_s)

    def stage(self, text: str) -> None:
        self.progress.console.print(text)

    def note(self, text: str) -> None:
        self.progress.console.print(text)
