"""A mutant as a Kafka build: the release's jars with the one that holds the mutated class
(``kafka-storage``, ``kafka-server-common``, ...) replaced by a copy whose one class is the
mutant's bytecode, judged through the build-gating path (``--kafka-classpath``,
:mod:`conformance.targets.kafka_build`) exactly as a user's own build is: version and digest read
from the jars, the release's own Kafka jars never beside it."""

from __future__ import annotations

import os
import shutil
import zipfile

from conformance.kafka_mutation.pit import Mutant, MutationError


def entry_of(clazz: str) -> str:
    return clazz.replace(".", "/") + ".class"


def patched_jar(jar: str, mutant: Mutant, folder: str) -> str:
    """``folder/<the jar's name>``: ``jar`` with the mutant's class in place of the release's (a
    class the jar does not hold is a :class:`MutationError`)."""
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, os.path.basename(jar))
    entry = entry_of(mutant.clazz)
    with open(mutant.class_file, "rb") as f:
        code = f.read()
    replaced = False
    tmp = out + ".tmp"
    with zipfile.ZipFile(jar) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == entry:
                data, replaced = code, True
            dst.writestr(info, data)
    if not replaced:
        os.unlink(tmp)
        raise MutationError(f"{jar}: no {entry} to replace with mutant {mutant.id}")
    os.replace(tmp, out)
    return out


def mutant_classpath(kafka_jars: tuple[str, ...], patched: str) -> str:
    """The release's Kafka jars with the one named as ``patched`` replaced by it: a
    ``--kafka-classpath`` value."""
    name = os.path.basename(patched)
    jars = [patched if os.path.basename(j) == name else j for j in kafka_jars]
    if patched not in jars:
        raise MutationError(f"no {name} among the release's jars to replace")
    return os.pathsep.join(jars)


def remove(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
