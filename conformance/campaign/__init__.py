"""Fuzzing campaigns (``klc campaign``): the crash state machine as seed-addressed tasks on Spark.

* :mod:`.tasks` — a task (commit, seed, fault profile, target), its own fault rates, its run, and a
  failure's signature; reproduce and shrink one failing row;
* :mod:`.driver` — the stages (fuzz → reproduce → shrink → dedupe → corpus) on Spark or local processes;
* :mod:`.table` — the Parquet results table; :mod:`.exampledb` — a Hypothesis database view over it;
* :mod:`.corpus` — ``corpora/found/<signature>/`` entries; :mod:`.report` — the HTML report.

docs/campaign.md describes the whole pipeline.
"""
