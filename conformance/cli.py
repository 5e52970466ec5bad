"""``klc`` — the command line of kafka-log-conformance."""

from __future__ import annotations

import os
import sys

import click

from conformance.dump import DumpIOError, DumpOptions, dump_file

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-log-conformance")
def main() -> None:
    """Reference model, implementation and conformance suite for Kafka's on-disk log layer."""


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=str))
@click.option("--deep-iteration", is_flag=True, help="Decode every record inside each batch.")
@click.option("--print-data-log", is_flag=True, help="Print keys and values (implies --deep-iteration).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line: per batch, per error, per file end.")
def dump(files: tuple[str, ...], deep_iteration: bool, print_data_log: bool, as_json: bool) -> None:
    """Print the batches of Kafka .log segment files (and Fetch record sets with the same layout).

    Invalid data is reported (valid prefix, then file, byte position and reason) with exit status
    0; the status is non-zero only for usage or I/O errors.
    """
    for path in files:
        if path.endswith(INDEX_SUFFIXES):
            raise click.UsageError(f"{path}: index files are not handled by this version of klc dump; pass .log files")
    options = DumpOptions(deep_iteration, print_data_log, as_json)
    out = sys.stdout
    failed = False
    try:
        for path in files:
            try:
                dump_file(path, options, lambda line: out.write(line + "\n"))
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
