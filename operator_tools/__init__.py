"""The operator tools: ``klc dump`` (what is in a log dir's files, by kind, as kafka-dump-log
prints it) and ``klc load`` (what a broker's restart would do with its dirs, on a private copy,
and whether it would lose data or not start).

They read Kafka's files through the specification and its implementation (``model/``, ``impl/``):
records and indexes through ``impl``'s scanners and readers, checkpoints and producer snapshots
through ``model``'s parsers, a load through ``impl.log_manager`` (or the kafka target's JVM with
``--target kafka``), opening files only through :mod:`operator_tools.files`.  They are no part of
the conformance harness (``conformance/``): no harness module imports them; the one command line,
``conformance/cli.py``, runs both.
"""
