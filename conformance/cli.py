"""``klc`` — the command line of kafka-log-conformance."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import threading

import attrs
import click

from conformance.mutants import MutantError, mutant_stack
from conformance.scenario import Scenario, ScenarioError
from conformance.targets import HarnessError, kafka_jvm
from conformance.targets.kafka_jvm import RELEASE, KafkaTargetError, NoAdapter, shared
from impl.config import ConfigError, LogConfig
from operator_tools.dump import DumpIOError, DumpOptions, check_regular_file, dump_file
from operator_tools.dump_decoders import DECODERS
from operator_tools.dump_index import INDEX_SUFFIXES, dump_index_file
from operator_tools.dump_state import STATE_FILES, dump_state_file


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Python raises KeyboardInterrupt for SIGINT."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum: int, _frame) -> None:
    raise Interrupted(signum)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # ended as SIGINT ends a command: cleanup, then exit


class _Klc(click.Group):
    """klc's commands.  SIGTERM and SIGHUP end a command as SIGINT does: unwinding it, so that what
    it cleans up in ``finally`` is cleaned up (``klc load``'s private copy, a kafka target's root and
    JVM, a campaign's run record written as interrupted), then exit status 128 + the signal.  A usage
    error is one line on stderr naming the command, exit status 2, in every command (click's own
    form is three lines, usage and a hint first)."""

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

    def invoke(self, ctx):
        main_thread = threading.current_thread() is threading.main_thread()  # where handlers may be set
        before = {s: signal.signal(s, _interrupt) for s in STOP_SIGNALS} if main_thread else {}
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            signum = getattr(e, "signum", signal.SIGINT)
            click.echo(f"klc: stopped by {signal.Signals(signum).name}", err=True)
            sys.exit(128 + signum)
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)


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


KAFKA_CLASSPATH_HELP = (
    "With --target kafka: judge your own Kafka build, in place of the release's jars (never beside "
    "them): jars, a libs/ directory or glob ('kafka/libs/*'), or a Kafka source tree built with "
    "./gradlew jar.  Its version picks the adapter; a classpath that is not one Kafka is refused.  "
    "Default: $KLC_KAFKA_CLASSPATH."
)


def _kafka_classpath_option(command):
    return click.option("--kafka-classpath", metavar="PATH", help=KAFKA_CLASSPATH_HELP)(command)


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
@_kafka_classpath_option
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
    kafka target could not run (a harness error: its JVM died or stopped answering — no verdict),
    3 nothing violated but not judged to the end (a target could not express a step, or the
    scenario reached a known Kafka bug: corpora/kafka-findings).
    """
    target, build = _judged(target, kafka_classpath, "replay")
    targets = {"both": ("model", "impl")}.get(target, ("model", target) if target.startswith("kafka") else (target,))
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(mutant_stack(mutant))
    except MutantError as e:
        raise click.BadParameter(str(e), param_hint="--mutant") from None
    with stack:
        _replay(scenarios, targets, backend, as_json, build)


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


def _judged(target: str, kafka_classpath: str | None, command: str):
    """The target to run and what it judges (a kafka_build.KafkaBuild; None for impl and the model).

    ``--kafka-classpath`` (or KLC_KAFKA_CLASSPATH) names the user's build: it replaces the release's
    jars, its version picks the adapter (``kafka`` for the pinned line, else ``kafka:VERSION``) and a
    ``--target kafka:VERSION`` of another version is refused.  Every refusal is one line, exit 2."""
    if not target.startswith("kafka"):
        if kafka_classpath:
            raise click.BadParameter("goes with --target kafka", param_hint="--kafka-classpath")
        return target, None
    from conformance.targets import kafka_build

    release = target.partition(":")[2] or None
    spec = kafka_classpath or os.environ.get(kafka_jvm.BUILD_VARIABLE)
    try:
        if not spec:
            return target, kafka_jvm.release_build(release)
        build = kafka_build.inspect(spec)
        if kafka_jvm.contradicts(release, build):
            raise KafkaTargetError(
                f"--target kafka:{release} contradicts the build's jars, which are Kafka {build.version} ({build.source})"
            )
        kafka_jvm.classpath_of(build)  # builds the adapter, refuses a partial build, before any run
    except kafka_jvm.NoAdapter as e:
        if spec:
            _harness_exit(command, f"{build.describe()}: {e}")
        _refused(command, target, e)  # a release no adapter runs: refused, as in every command
    except KafkaTargetError as e:
        _harness_exit(command, str(e))
    _set_for_this_command(kafka_jvm.BUILD_VARIABLE, spec)  # the targets of this process and its workers judge it
    adapter = kafka_jvm.adapter_release(build)
    return ("kafka" if adapter is None else f"kafka:{adapter}"), build


def _set_for_this_command(name: str, value: str) -> None:
    """An environment variable for the rest of this command, restored when it ends (a caller that
    runs klc in its own process, a test's CliRunner, keeps its environment)."""
    before = os.environ.get(name)
    os.environ[name] = value

    def restore() -> None:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before

    click.get_current_context().call_on_close(restore)


def _harness_exit(command: str, message: str):
    click.echo(f"klc {command}: {message}", err=True)
    sys.exit(2)


def _judged_line(build) -> str:
    return f"judged: {build.describe()}"


def _replay(scenarios: tuple[str, ...], targets: tuple[str, ...], backend: str, as_json: bool, build=None) -> None:
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
        except HarnessError as e:  # a dead or hung JVM: nothing was judged, no verdict is printed
            click.echo(f"klc replay: {path}: HARNESS ERROR, not a verdict: {e}", err=True)
            sys.exit(2)
        if as_json:
            judged = {"kafka_build": build.to_json()} if build is not None else {}
            click.echo(json.dumps({"scenario": path} | verdict.to_json() | judged))
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
    if build is not None and not as_json:
        click.echo(_judged_line(build))
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
    help="A Kafka release to replay on (repeat it); default: the last release of every line that shipped or "
    "fixed a bug of the corpus, back to 0.11, and the pinned one.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per cell: case, release, verdict, witness, recorded."
)
@_kafka_classpath_option
def matrix(cases: tuple[str, ...], releases: tuple[str, ...], as_json: bool, kafka_classpath: str | None) -> None:
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
    build = None
    if kafka_classpath or os.environ.get(kafka_jvm.BUILD_VARIABLE):
        # the build's own release is the one column: its recorded verdicts are what it must get
        target, build = _judged(f"kafka:{releases[0]}" if len(releases) == 1 else "kafka", kafka_classpath, "matrix")
        if len(releases) > 1:
            _harness_exit("matrix", f"--release {', '.join(releases)}: a build is one release ({build.version})")
        releases = (target.partition(":")[2] or kafka_jvm.PINNED,)
        if not as_json:
            click.echo(_judged_line(build), err=True)
    releases = releases or mx.RELEASES
    judged = {"kafka_build": build.to_json()} if build is not None else {}

    def progress(case, release, cell):
        if as_json:
            click.echo(json.dumps({"case": case.name, "release": release, **attrs.asdict(cell)} | judged))
        else:
            click.echo(f"{case.name} on {release}: {mx.short(cell)}", err=True)

    try:
        grid = mx.measure(chosen, releases, progress)
    except KafkaTargetError as e:
        click.echo(f"klc matrix: {e}", err=True)
        sys.exit(2)
    if not as_json:
        click.echo("\n".join(mx.render(grid, chosen, releases)))
        if build is not None:
            click.echo(_judged_line(build))
    differing = [f"{n} on {r}: {c.verdict}, recorded {c.recorded}" for (n, r), c in grid.items() if not c.agrees]
    for line in differing:
        click.echo(f"klc matrix: differs from the recorded verdict: {line}", err=True)
    sys.exit(1 if differing else 0)


@main.command()
@click.argument("case_path", metavar="CASE", type=click.Path(path_type=str))
@click.option("--from", "first", default="1.1.0", show_default=True, metavar="VERSION", help="The older end.")
@click.option("--to", "last", default=kafka_jvm.PINNED, show_default=True, metavar="VERSION", help="The newer end.")
@click.option("--json", "as_json", is_flag=True, help="The releases replayed, their verdicts and the answer as JSON.")
def bisect(case_path: str, first: str, last: str, as_json: bool) -> None:
    """Find the first Kafka release at which a corpus CASE's verdict changes, between --from and --to:
    the releases Maven Central publishes that an adapter runs (0.11-4.3 and the pinned one), replayed
    on about log2(n) of them.  A release whose adapter cannot run is skipped and named.

    Exit status: 0 the change was found (said as "VERDICT up to A, VERDICT from B"), 1 the verdict is
    the same at both ends, 2 a bad argument, no list of releases, or an end that cannot be judged.
    The first use of a release builds its adapter (Maven, docs/kafka-target.md).
    """
    from conformance import bisect as bs  # local: the runner and every target

    try:
        case = bs.case_named(case_path)
        releases = bs.between(bs.published(), first, last)
        result = bs.bisect(case.name, releases, bs.replay_on(case))
    except bs.BisectError as e:
        _harness_exit("bisect", str(e))
    if as_json:
        click.echo(json.dumps(result.to_json()))
    else:
        click.echo("\n".join(bs.lines(result)))
    sys.exit(0 if result.first_changed else 1)


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
@_kafka_classpath_option
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
        report, build = _load_report(dirs, config_items, target, kafka_classpath, count_batches)
    except HostError as e:
        click.echo(f"klc load: {e}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        for line in format_text(report):
            click.echo(line)
        if build is not None:
            click.echo(_judged_line(build))
    sys.exit(report["restart"]["exit_status"])


def _load_report(dirs, config_items, target, kafka_classpath, count_batches) -> tuple[dict, object]:
    """The load's report, and the Kafka build it judged (None on impl)."""
    from operator_tools.load_report import load_dirs, load_dirs_on_kafka  # local: impl log stack, slow

    config = _config_option(config_items)
    target, build = _judged(target, kafka_classpath, "load")
    if target.startswith("kafka"):
        release = target.partition(":")[2] or None
        try:
            classpath = kafka_jvm.classpath_of(build) if kafka_jvm.user_build() is not None else None
            jvm = shared(classpath, release)
            if build is not None and jvm.version != build.version:
                raise KafkaTargetError(f"the JVM runs Kafka {jvm.version}, not the build's {build.version}")
            report = load_dirs_on_kafka(list(dirs), _config_items(config_items), jvm, count_batches)
        except NoAdapter as e:
            _refused("load", target, e)
        except KafkaTargetError as e:
            click.echo(f"klc load: {e}", err=True)
            sys.exit(2)
        if build is not None:
            report["kafka_build"] = build.to_json()
        return report, build
    return load_dirs(list(dirs), config, count_batches), None


CHECK_TARGET_HELP = (
    "impl: the implementation on both storage backends; kafka: Apache Kafka's own log layer (the pinned "
    "release, or the build --kafka-classpath names); kafka:VERSION: that release."
)


def _check_target(value: str) -> str:
    if value == "impl" or value == "kafka" or (value.startswith("kafka:") and RELEASE.fullmatch(value[6:])):
        return value
    raise click.BadParameter(f"{value!r}: use impl, kafka or kafka:VERSION (e.g. kafka:4.3.1)")


@main.command()
@click.option(
    "--budget-seconds",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="The whole run's time: the corpora, then the state machines while time is left, each at least one "
    "round (0: corpora only).",
)
@click.option("--json", "as_json", is_flag=True, help="The summary as JSON.")
@click.option(
    "--target",
    default="impl",
    show_default=True,
    callback=lambda ctx, param, value: _check_target(value),
    help=CHECK_TARGET_HELP,
)
@_kafka_classpath_option
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Also write the result as JUnit XML here.")
def check(budget_seconds: float, as_json: bool, target: str, kafka_classpath: str | None, junit_path) -> None:
    """The conformance gate: replay the corpora, run the state machines within the budget, print a
    per-property summary.  On a kafka target the corpus cases that record a verdict for it must get
    that verdict, and the crash machine runs the model against Kafka (docs/gate.md).

    Exit status: 0 nothing unexpected (known Kafka bugs and recorded unsupported steps are listed),
    1 a violation or a verdict other than the recorded one, 2 the kafka target could not run (a
    refused classpath, a dead JVM: a harness error, nothing judged after it).
    """
    target, build = _judged(target, kafka_classpath, "check")
    report = _gate(budget_seconds, target, build, quiet=as_json)
    if junit_path:
        _write(junit_path, _junit(report))
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        _print_summary(report)
    sys.exit(_gate_status(report))


@main.command()
@click.argument("cases", nargs=-1, type=click.Path(dir_okay=False, path_type=str))
@_kafka_classpath_option
@click.option(
    "--target",
    default="kafka",
    show_default=True,
    callback=lambda ctx, param, value: _check_target(value),
    help="kafka (the build's own version picks the adapter) or kafka:VERSION (must be the build's).",
)
@click.option(
    "--budget-seconds",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Time for the crash machine against Kafka, after the corpus (0: the corpus only).",
)
@click.option(
    "--out",
    default="gate-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where gate.json and junit.xml go.",
)
def gate(cases: tuple[str, ...], kafka_classpath: str | None, target: str, budget_seconds: float, out: str) -> None:
    """Gate a Kafka build: every corpus case (or the CASES named) that records a verdict for the
    build's release gets that verdict on the build, then the crash machine searches model against the build for the
    budget.  Writes OUT/gate.json and OUT/junit.xml; the last line says the outcome (docs/gate.md).

    Exit status: 0 nothing unexpected, 1 something unexpected (a failing case, a machine's
    violation: junit.xml has the witness and the command that reproduces it), 2 the build was refused
    or could not run (one line says why).
    """
    if target == "impl":
        raise click.BadParameter("klc gate judges Kafka: kafka or kafka:VERSION", param_hint="--target")
    if not kafka_classpath and not os.environ.get(kafka_jvm.BUILD_VARIABLE):
        click.echo("klc gate: no build given: judging the pinned release's own jars (--kafka-classpath names yours)")
    target, build = _judged(target, kafka_classpath, "gate")
    report = _gate(budget_seconds, target, build, quiet=False, only=cases)
    os.makedirs(out, exist_ok=True)
    _write(os.path.join(out, "gate.json"), json.dumps(report.to_json(), indent=1) + "\n")
    _write(os.path.join(out, "junit.xml"), _junit(report))
    _print_summary(report)
    click.echo(f"results: {os.path.join(out, 'gate.json')}, {os.path.join(out, 'junit.xml')}")
    click.echo(_gate_line(report))
    sys.exit(_gate_status(report))


def _gate(budget_seconds: float, target: str, build, quiet: bool, only: tuple[str, ...] = ()):
    from conformance.gate import chosen, run_gate  # local: Hypothesis state machines, slow for `klc dump` startup

    try:
        chosen(only)
    except (ValueError, ScenarioError) as e:
        raise click.BadParameter(str(e), param_hint="CASES") from None
    if build is not None and not quiet:
        click.echo(_judged_line(build))
    progress = lambda line: None if quiet else click.echo(line)  # noqa: E731
    report = run_gate(budget_seconds, progress=progress, target=target, only=only)
    report.kafka_build = build.to_json() if build is not None else None
    return report


def _junit(report) -> str:
    from conformance.gate import junit_xml

    spec = os.environ.get(kafka_jvm.BUILD_VARIABLE) if report.target.startswith("kafka") else None
    command = f"klc replay --target {report.target}" + (f" --kafka-classpath '{spec}'" if spec else "")
    return junit_xml(report, command)


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        _harness_exit("check", f"{path}: {e.strerror}")


def _gate_status(report) -> int:
    return 2 if report.harness_error else 0 if report.ok else 1


def _gate_line(report) -> str:
    """One line: the outcome, and what was judged."""
    judged = (
        f"Kafka {report.kafka_build['version']} (jars sha256:{report.kafka_build['digest'][:16]})"
        if report.kafka_build
        else report.target
    )
    machines = sum(report.machine_cases.values())
    if report.harness_error:
        return f"GATE ERROR on {judged}: nothing judged after: {report.harness_error}"
    unexpected = len(report.violations)
    tally = (
        f"{report.corpus_cases} corpus cases, {machines} machine cases, {len(report.known)} known, {report.seconds} s"
    )
    if unexpected:
        return (
            f"GATE FAIL on {judged}: {unexpected} unexpected ({tally}); first: {report.violations[0].splitlines()[0]}"
        )
    return f"GATE PASS on {judged}: nothing unexpected ({tally})"


def _print_summary(report) -> None:
    if report.kafka_build:
        click.echo(f"judged: Kafka {report.kafka_build['version']} (commit {report.kafka_build['commit']}, "
                   f"jars sha256:{report.kafka_build['digest'][:16]}, {report.kafka_build['jars']} jars)")  # fmt: skip
    click.echo(f"checked ({report.seconds} s):")
    for prop, n in sorted(report.checked.items()):
        click.echo(f"  {prop:15} {n:8} checks")
    if report.unrecorded:
        click.echo(f"  {report.unrecorded} corpus cases record no verdict for {report.target}: not run on it")
    for name, n in report.machine_cases.items():
        click.echo(f"  {name}: {n} cases")
    if report.harness_error:
        click.echo(f"ERROR: the target could not run, nothing judged after it: {report.harness_error}")
    else:
        click.echo("PASS: no property violated" if report.ok else "FAIL:")
    for v in report.violations:
        click.echo(f"  {v}")
    if report.known:
        click.echo("known (failing as recorded: open found/ bugs, Kafka's own bugs, recorded unsupported steps):")
        for v in report.known:
            click.echo(f"  {v}")


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
    help="impl (against the model), kafka (the model against Kafka's own log layer, docs/kafka-target.md), "
    "kafka:VERSION (that release), model, or mutant:NAME.",
)
@_kafka_classpath_option
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
    "--shrink-seconds",
    type=float,
    help="Each half of one new failure's shrink (Hypothesis's shrinker, then deleting whole steps) stops "
    "there, keeping the smallest scenario so far  [default: 120]",
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
def campaign(budget_minutes, scenarios, master, profile, target, kafka_classpath, out, corpus_dir, examples_per_task, steps, reproduce_attempts, shrink_seconds, executor, conf, as_json) -> None:  # fmt: skip
    """A fuzzing campaign: the crash state machine as seed-addressed tasks on Spark (local mode by
    default), results appended to OUT/results (Parquet), new failures reproduced, shrunk, deduplicated
    and written to corpora/found/<signature>/, and a report in OUT/report.html.

    Rerunning skips the seeds already in the table for this commit, profile, target and (on a kafka
    target) the digest of the jars judged, but not those of a harness error; a second campaign into
    the same OUT waits for the first.  Exit status:
    0 no new failure (failures whose signature already has a corpus entry are counted, not new),
    1 a new signature, 2 a harness error in a task (a dead or hung kafka JVM: those seeds were not
    judged), bad arguments, no Spark, an unreachable master, or a campaign Spark aborted (a task
    failed on every retry); 128+N stopped by signal N (SIGINT, SIGTERM, SIGHUP).
    """
    from conformance.campaign.driver import CampaignConfig, CampaignError, run_campaign  # local: Spark, Hypothesis

    target, build = _judged(target, kafka_classpath, "campaign")
    if build is not None and not as_json:
        click.echo(_judged_line(build))
    config = CampaignConfig(
        out=out, budget_minutes=budget_minutes, scenarios=scenarios, master=master, profile=profile, target=target,
        examples_per_task=examples_per_task, steps=steps, corpus_dir=corpus_dir,
        reproduce_attempts=reproduce_attempts, executor=executor, conf=tuple(conf),
        kafka_build=build.to_json() if build is not None else None,
        kafka_classpath=os.environ.get(kafka_jvm.BUILD_VARIABLE, "") if build is not None else "",
        **({"shrink_seconds": shrink_seconds} if shrink_seconds is not None else {}),
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
    errors = [r for r in failed if r["status"] == "error"]
    if as_json:
        click.echo(json.dumps({
            "run_id": result.run_id, "tasks": len(result.rows), "scenarios": result.scenarios,
            "skipped_seeds": result.skipped, "failed_tasks": len(failed), "seconds": result.seconds,
            "fuzz_seconds": run["fuzz_s"], "scenarios_per_s": result.scenarios_per_s, "master": run["master"],
            "executors": run["executors"], "parallelism": result.parallelism, "findings": result.findings,
            "harness_errors": [{k: r[k] for k in ("seed", "signature", "witness")} for r in errors],
            "report": result.report, "kafka_build": config.kafka_build,
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
        for line in harness_error_lines(errors):
            click.echo(line)
        click.echo(f"report: {result.report}")
        if build is not None:
            click.echo(_judged_line(build))
    # a harness error is no verdict: those seeds were not judged (exit 2, as replay's)
    sys.exit(2 if errors else 1 if result.findings else 0)


def harness_error_lines(errors: list[dict], shown: int = 5) -> list[str]:
    """The console's lines for a campaign's harness errors: one per signature, with its cause
    (the witness: how the JVM ended, its stderr's tail), the seeds it hit, and where the traceback is."""
    by_signature: dict[str, list[dict]] = {}
    for r in errors:
        by_signature.setdefault(r["signature"], []).append(r)
    lines = []
    for signature, rows in list(by_signature.items())[:shown]:
        seeds = ", ".join(str(r["seed"]) for r in rows[:10]) + (", ..." if len(rows) > 10 else "")
        lines.append(
            f"  HARNESS ERROR (not judged, not a finding) in {len(rows)} task(s), seed(s) {seeds}: {rows[0]['witness']}"
        )
    if len(by_signature) > shown:
        lines.append(f"  ... and {len(by_signature) - shown} more kind(s) of harness error")
    if errors:
        lines.append("  (each traceback is in the results table's error column; a rerun runs those seeds again)")
    return lines


def _last_line(text: str) -> str:
    """An error's own line: a traceback's last non-empty line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else "(no message)"


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


@main.command("mutate-kafka")
@click.option("--release", default="4.3.1", show_default=True, help="the Kafka release whose classes and tests are mutated")
@click.option("--classes", "classes", default=",".join(("OffsetIndex", "TimeIndex", "TransactionIndex", "AbstractIndex")),
              show_default=True, help="comma-separated: short names (OffsetIndex, LogLoader, CheckpointFile, ...) or the dotted name of a class in any of the release's Kafka jars")  # fmt: skip
@click.option("--out", default="mutate-kafka-out", show_default=True, help="the folder of PIT's reports, the results table and the report")
@click.option("--executor", type=click.Choice(["spark", "processes"]), default="processes", show_default=True)
@click.option("--master", default=None, help="Spark master (--executor spark; default local[WORKERS])")
@click.option("--workers", type=click.IntRange(1), default=1, show_default=True, help="mutant batches judged at once")
@click.option("--batch", type=click.IntRange(1), default=4, show_default=True, help="mutants per task")
@click.option("--max-cases", type=click.IntRange(1), default=None, help="covering corpus cases run per mutant at most (default: all)")
@click.option("--machine-examples", type=click.IntRange(0), default=10, show_default=True,
              help="crash machine examples (derandomised) for a mutant the corpus leaves alive; 0: none")  # fmt: skip
@click.option("--hot-swap/--jvm-per-mutant", default=True, show_default=True,
              help="swap each mutant into one live adapter JVM, or start a JVM on a patched jar per mutant")  # fmt: skip
@click.option("--cases", "cases", multiple=True, help="only the corpus cases whose names start so (log/, crash/); repeatable")
@click.option("--again", is_flag=True, help="judge again the survivors not run on every covering case (a larger --max-cases) and the harness errors")
@click.option("--kafka-io", is_flag=True,
              help="capture Kafka's own I/O on the suite's side (strace): the durability promises and crashes cut from "
                   "Kafka's journal judge each mutant, a JVM per mutant; with --again, the survivors judged without it too")
@click.option("--mutant", "only", multiple=True,
              help="judge only this mutant (its id in the report: ShortClass/N); repeatable")
@click.option("--kafka-survivors-only", is_flag=True,
              help="with --again, only the mutants Kafka's tests leave alive (the survivors the side by side triages)")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option("--kafka-tests", type=click.Choice(["all", "storage", "kept"]), default="all", show_default=True,
              help="Kafka's tests that judge the mutants: kafka-storage's, or those and Scala core's LogLoaderTest, "
                   "LogManagerTest and LogCleanerTest; kept: those of the PIT reports OUT holds, PIT not run again")  # fmt: skip
def mutate_kafka(release, classes, out, executor, master, workers, batch, max_cases, machine_examples, hot_swap, cases, again, kafka_io, only, kafka_survivors_only, kafka_tests, as_json) -> None:  # fmt: skip
    """PIT mutants of Kafka's own log classes, killed by Kafka's own unit tests (the release's test
    jars) and by this suite (the corpus cases that run the mutated method, then the crash machine),
    side by side: OUT/report.json and OUT/report.html (docs/kafka-mutation.md).

    Exit status: 0 the report was written, 2 nothing could be judged (an unknown release, a class
    not in the release, no Maven or Java, PIT failing) with one line saying why.
    """
    from conformance.kafka_mutation import pit, run  # local: pyarrow and PIT's set-up

    if release not in pit.RELEASES:
        _harness_exit("mutate-kafka", f"--release {release}: no mutation set-up for it (releases: {', '.join(pit.RELEASES)})")
    names = tuple(c.strip() for c in classes.split(",") if c.strip())
    if not names:
        _harness_exit("mutate-kafka", "--classes names no class")
    config = run.Config(
        release, names, out, executor, master, workers, batch, max_cases, machine_examples, hot_swap, cases, again, kafka_io,
        kafka_tests, kafka_survivors_only, tuple(only),
    )
    quiet = as_json
    try:
        report = run.run(config, progress=(lambda line: None) if quiet else click.echo)
    except (HarnessError, OSError, ScenarioError) as e:  # a corpus case that is no scenario: nothing judged
        _harness_exit("mutate-kafka", str(e))
    if as_json:
        click.echo(json.dumps(report, indent=1))
        return
    total = report["by_class"].get("total")
    if total:
        click.echo(
            f"{total['mutants']} mutants: Kafka's tests killed {total['kafka_killed']}, this suite {total['suite_killed']}; "
            f"both {total['both']}, Kafka only {total['kafka_only']}, suite only {total['suite_only']}, "
            f"neither {total['neither']}, suite harness errors {total['suite_harness_error']}"
        )
    click.echo(f"report: {os.path.join(out, 'report.json')}, {os.path.join(out, 'report.html')}")
