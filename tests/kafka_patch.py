"""Kafka builds for the gate's own tests (docs/gate.md): a release's jars laid out as a user's build
(``libs/``, as ``mvn dependency:copy-dependencies`` or a release tarball has them), and a broken
build made from one by ``kafka-patch/`` (ASM: one call removed from one class of one jar)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from conformance.targets import kafka_jvm

PATCH_PROJECT = kafka_jvm.CHECKOUT / "kafka-patch"


def release_libs(folder: Path, release: str | None = None) -> Path:
    """``folder/libs``: links to the jars the release's adapter build runs on (Kafka's and their
    third-party dependencies), the adapter's own jar left out."""
    libs = folder / "libs"
    libs.mkdir(parents=True)
    for jar in kafka_jvm.build_for(release).split(os.pathsep)[1:]:
        (libs / os.path.basename(jar)).symlink_to(jar)
    return libs


def patch_tool() -> str:
    """The classpath of kafka-patch's RemoveCall, built by Maven when a source is newer than its jar."""
    jar = PATCH_PROJECT / "target" / "kafka-patch-1.jar"
    classpath = PATCH_PROJECT / "target" / "classpath.txt"
    sources = [PATCH_PROJECT / "pom.xml", *(PATCH_PROJECT / "src").rglob("*.java")]
    (PATCH_PROJECT / "target").mkdir(exist_ok=True)
    with open(PATCH_PROJECT / "target" / ".build.lock", "w") as lock:  # xdist workers build once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (jar.is_file() and classpath.is_file()) or jar.stat().st_mtime < max(s.stat().st_mtime for s in sources):
            for offline in (["-o"], []):
                done = subprocess.run(
                    ["mvn", "-q", "-B", *offline, "package"], cwd=PATCH_PROJECT, capture_output=True, text=True
                )
                if done.returncode == 0:
                    break
            else:
                raise RuntimeError(f"the Maven build of kafka-patch failed: {(done.stdout + done.stderr)[-2000:]}")
    return os.pathsep.join([str(jar), classpath.read_text().strip()])


def remove_call(libs: Path, jar_name: str, klass: str, method: str, call: str) -> Path:
    """Replace ``libs/jar_name`` (a link) by a copy whose ``klass.method`` no longer calls ``call``."""
    original = (libs / jar_name).resolve()
    (libs / jar_name).unlink()
    tool = [
        "java",
        "-cp",
        patch_tool(),
        "klc.patch.RemoveCall",
        str(original),
        str(libs / jar_name),
        klass,
        method,
        call,
    ]
    done = subprocess.run(tool, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"RemoveCall failed ({done.returncode}): {done.stderr.strip()}")
    assert int(done.stdout) >= 1
    return libs / jar_name


def copy_of(libs: Path, folder: Path) -> Path:
    """Another libs/ with the same links (a build to patch beside the original)."""
    shutil.copytree(libs, folder, symlinks=True)
    return folder
