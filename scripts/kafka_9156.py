"""KAFKA-9156 with real threads (issue 31 item 3): how often a release builds two index objects
for one file when two fetches are the first to touch a segment's lazy offset index.

    python scripts/kafka_9156.py [--iterations N] RELEASE [RELEASE ...]     e.g. 2.3.1 2.4.1 pinned

A broker writes N one-batch segments (segment.bytes 100) and restarts: since KAFKA-7283 (2.3) a
load leaves every inactive segment's indexes unopened.  Then, segment by segment, a ``race`` step
on the kafka target runs two fetches from that segment's base on two JVM threads released
together (Race.java): each one's translateOffset opens the offset index, the first access to it.
Printed per release: the races whose offset index was built at all, those that built two objects
for it (IndexBuilds.java), and the steps refused after one.  The other path the fix names — a fetch
beside an append on a just-rolled segment — is the corpus case
corpora/KAFKA-9156/fetch-and-append-open-a-rolled-segments-index.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance import scenario as sc  # noqa: E402
from conformance.targets.kafka import KafkaTarget  # noqa: E402

TS = 1_700_000_000_000


def append(i: int) -> sc.Append:
    return sc.Append(batches=(sc.BatchSpec((sc.Rec(TS + i, "k", "v"),)),))


def measure(release: str | None, iterations: int) -> dict:
    target = KafkaTarget(sc.Scenario((), {"segment.bytes": 100}), release=release)
    touched, twice, refused, first = 0, 0, 0, None
    began = time.monotonic()
    try:
        for step in (sc.Open(), sc.Create(), *[append(i) for i in range(iterations + 1)], sc.Shutdown(), sc.Open()):
            assert "error" not in target.apply(step), step
        for i in range(iterations):  # segment i holds offset i; the last one is active
            fetch = sc.Read(offset=i)
            answer = target.apply(sc.Race(steps=(fetch, fetch), schedule=(1, 1, 1)))
            refused += sum(1 for r in answer.get("race", []) if "error" in r) + ("error" in answer)
            touched += any(p.endswith(".index") for p in target.index_builds)
            if target.built_twice:
                twice += 1
                first = first or (i, target.built_twice)
    finally:
        target.close()
    return {
        "touched": touched,
        "twice": twice,
        "refused": refused,
        "first": first,
        "seconds": round(time.monotonic() - began, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="+", help="Kafka releases (kafka:VERSION's VERSION), or 'pinned'")
    parser.add_argument("--iterations", type=int, default=500)
    args = parser.parse_args()
    for release in args.releases:
        r = measure(None if release == "pinned" else release, args.iterations)
        print(
            f"{release}: {r['touched']} of {args.iterations} races built an offset index, "
            f"{r['twice']} built one twice, "
            f"{r['refused']} steps refused, {r['seconds']} s"
            + (f"; first at iteration {r['first'][0]}: {r['first'][1]}" if r["first"] else "")
        )


if __name__ == "__main__":
    main()
