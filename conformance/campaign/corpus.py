"""What a campaign found, as regression cases: ``corpora/found/<signature>/`` (DESIGN.md "Scenarios
and corpora": named folders are never pruned; campaign finds go here).

Each folder holds ``scenario.json`` (the shrunk scenario, replayable with ``klc replay``),
``expected.json`` (signature, property, witness, the task that found it, and the verdict the scenario
gets on each target, measured when the entry was written) and a ``README.md`` for people.
``tests/test_campaign_finds.py`` replays every entry on every target it names.
"""

from __future__ import annotations

import glob
import json
import os
import time

from conformance import scenario as sc
from conformance.campaign.tasks import replay_signature
from conformance.regressions import verdict_of

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CORPUS = os.path.join(CHECKOUT, "corpora", "found")


def entry_name(signature: str, target: str) -> str:
    """``<signature>`` for impl; ``<target>--<signature>`` otherwise (``mutant-NAME--…``, ``model--…``):
    the same failure on two targets is two entries."""
    return signature if target == "impl" else f"{target.replace(':', '-')}--{signature}"


def known_entries(folder: str) -> set[str]:
    return {os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(folder, "*", "expected.json"))}


def entries(folder: str = DEFAULT_CORPUS) -> list[tuple[str, sc.Scenario, dict]]:
    """(folder, scenario, expected) for every entry."""
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*", "expected.json"))):
        entry = os.path.dirname(path)
        with open(path, encoding="utf-8") as f:
            expected = json.load(f)
        out.append((entry, sc.Scenario.load(os.path.join(entry, "scenario.json")), expected))
    return out


def verdict_on(scenario: sc.Scenario, target: str) -> str:
    """``pass``, or ``fail: <property>`` — what the runner says of ``scenario`` against ``target``."""
    _sig, violation = replay_signature(scenario, target)
    return verdict_of(violation)


def write_entry(folder: str, finding: dict) -> str:
    """Write one finding (a shrunk failing row plus its reproduction counts) as a corpus entry."""
    entry = os.path.join(folder, entry_name(finding["signature"], finding["target"]))
    os.makedirs(entry, exist_ok=True)
    scenario = sc.Scenario.from_json(json.loads(finding["steps"]))
    targets = [finding["target"]] + [t for t in ("impl",) if t != finding["target"]]
    verdicts = {t: verdict_on(scenario, t) for t in targets}
    found_on = verdicts[finding["target"]]
    expected = {
        "signature": finding["signature"],
        # caught: a mutant's failure, kept failing; open: a bug in impl or the model, not fixed yet —
        # the recorded verdict holds until someone fixes it, then the corpus test fails and the entry
        # is updated to pass (strict, like an xfail that must not start passing unnoticed)
        "status": "caught" if finding["target"].startswith("mutant:") else "open" if found_on != "pass" else "fixed",
        "property": finding["property"],
        "witness": finding["witness"],
        "verdicts": verdicts,
        "found_by": {k: finding[k] for k in ("commit", "seed", "profile", "target", "run_id")},
        "flaky": finding["flaky"],
        "shrunk_by": finding.get("shrunk_by", "not shrunk"),
        "reproduced": f"{finding['reproduced']}/{finding['attempts']}",
        "found_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with open(os.path.join(entry, "scenario.json"), "w", encoding="utf-8") as f:
        f.write(scenario.dumps() + "\n")
    with open(os.path.join(entry, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    mutant = finding["target"].split(":", 1)[1] if finding["target"].startswith("mutant:") else None
    replay = "klc replay scenario.json" + (f" --mutant {mutant}" if mutant else "") + " --target both"
    with open(os.path.join(entry, "README.md"), "w", encoding="utf-8") as f:
        f.write(
            f"# {finding['signature']}\n\n"
            f"Found by `klc campaign` (target `{finding['target']}`, fault profile `{finding['profile']}`, "
            f"seed {finding['seed']}, commit `{finding['commit']}`).\n\n"
            f"- property violated: **{finding['property']}**\n"
            f"- witness: {finding['witness']}\n"
            f"- shrunk to {len(scenario.steps)} steps; reproduced {expected['reproduced']} replays"
            f"{' (FLAKY)' if finding['flaky'] else ''}\n"
            f"- verdicts: {', '.join(f'{t}: {v}' for t, v in verdicts.items())} (status: {expected['status']})\n\n"
            f"Replay: `{replay}` (from this folder).  pytest replays it in `tests/test_campaign_finds.py`.\n"
        )
    return entry
