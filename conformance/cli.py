"""``klc`` — the command line of kafka-log-conformance."""

from __future__ import annotations

import os
import sys

import click

from conformance.dump import DumpIOError, DumpOptions, dump_file
from conformance.dump_index import INDEX_SUFFIXES, dump_index_file


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-log-conformance")
def main() -> None:
    """Reference model, implementation and conformance suite for Kafka's on-disk log layer."""


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=str))
@click.option("--deep-iteration", is_flag=True, help="Decode every record inside each batch.")
@click.option("--print-data-log", is_flag=True, help="Print keys and values (implies --deep-iteration).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line: per batch, per error, per file end.")
@click.option("--index-sanity-check", is_flag=True, help="Index files: print only Kafka's sanity-check verdict.")
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Index files: check the entries against the segment's .log, list mismatches.",
)
def dump(
    files: tuple[str, ...],
    deep_iteration: bool,
    print_data_log: bool,
    as_json: bool,
    index_sanity_check: bool,
    verify_index_only: bool,
) -> None:
    """Print Kafka .log segment files (and Fetch record sets with the same layout) and .index,
    .timeindex and .txnindex files.

    Invalid data is reported (valid prefix, then file, byte position and reason) with exit status
    0; the status is non-zero only for usage or I/O errors.
    """
    if index_sanity_check and verify_index_only:
        raise click.UsageError("--index-sanity-check and --verify-index-only exclude each other")
    options = DumpOptions(deep_iteration, print_data_log, as_json, index_sanity_check, verify_index_only)
    out = sys.stdout
    failed = False
    try:
        for path in files:
            try:
                dumper = dump_index_file if path.endswith(INDEX_SUFFIXES) else dump_file
                dumper(path, options, lambda line: out.write(line + "\n"))
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
