"""DESIGN.md: every file and directory operation in impl/ goes through the storage protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import impl

FORBIDDEN_MODULES = {"os", "mmap", "shutil", "pathlib", "io", "tempfile", "glob"}
FORBIDDEN_CALLS = {"open"}


def test_only_the_storage_backend_touches_the_os():
    offenders = []
    for path in sorted(Path(impl.__file__).parent.glob("*.py")):
        if path.name == "storage.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
                names = [node.func.id]
            else:
                continue
            offenders += [
                f"{path.name}:{node.lineno} uses {n}" for n in names if n in FORBIDDEN_MODULES | FORBIDDEN_CALLS
            ]
    assert offenders == []


def test_the_boundary_check_can_fail(tmp_path):
    """The checker itself sees a direct call (so the test above cannot pass vacuously)."""
    tree = ast.parse("import os\nopen('x')\n")
    kinds = [type(n).__name__ for n in ast.walk(tree) if isinstance(n, ast.Import | ast.Call)]
    assert kinds.count("Import") == 1 and kinds.count("Call") == 1
