"""Executable reference model of Apache Kafka's on-disk log layer.

Pure Python, in memory, written to be checked against ``spec/kafka-log-spec.md`` line by line.
Slow is fine; obvious is required.  ``model`` never imports ``impl`` (DESIGN.md).
"""
