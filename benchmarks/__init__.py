"""Measured figures for ``impl``, as ratios within one run (``python -m benchmarks``).

Nothing here is a test and no absolute time is ever a pass/fail criterion: every figure is a ratio of
two measurements taken in the same process, interleaved, on the same bytes (DESIGN.md, Performance).
MB/s figures are printed for orientation only.

Modules, one per benchmark:

* :mod:`benchmarks.segments` — in-memory segments built with ``model.records.build_batch_v2``;
* :mod:`benchmarks.timing` — interleaved best-of-N timing with ``time.perf_counter``;
* :mod:`benchmarks.scan` — impl ``BatchScan`` over the CRC-32C floor (figures 1 and 2);
* :mod:`benchmarks.model_vs_impl` — ``model.file_records.iterate_file`` over impl (figure 3);
* :mod:`benchmarks.mmap_scan` — impl over an ``mmap`` of the segment file versus over ``bytes``;
* :mod:`benchmarks.recovery` — ``LogSegment.recover()`` of the segment file over one ``crc32c`` call.
"""
