"""Import circles and function-local imports in model/, impl/, conformance/ and operator_tools/.

    python scripts/import_graph.py        # prints each circle and every function-local import

A circle is a strongly connected set of modules when every import, module-level or
function-local, is an edge: a function-local import only hides a circle from the interpreter.
"""

from __future__ import annotations

import ast
import os
import sys

PACKAGES = ("model", "impl", "conformance", "operator_tools")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def modules() -> dict[str, str]:
    out = {}
    for package in PACKAGES:
        for dirpath, _, names in os.walk(os.path.join(ROOT, package)):
            for name in names:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    mod = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
                    out[mod] = path
    return out


def imports(path: str, known: set[str]) -> tuple[set[str], list[tuple[int, str]]]:
    """(every own module imported, [(line, module) of each import inside a function])."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    edges, local = set(), []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        own = {n for n in names if n in known}
        edges |= own
        if id(node) in inside and names:
            local.append((node.lineno, names[0]))
    return edges, local


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    mods = modules()
    graph, locals_ = {}, {}
    for mod, path in mods.items():
        edges, local = imports(path, set(mods))
        graph[mod] = {e for e in edges if e != mod and not mod.startswith(e + ".")}
        locals_[mod] = local
    found = circles(graph)
    for comp in found:
        print("circle:", " ↔ ".join(comp))
    n = sum(len(v) for v in locals_.values())
    for mod, local in sorted(locals_.items()):
        for line, name in local:
            print(f"local import: {mods[mod]}:{line} {name}")
    print(f"{len(found)} circles, {n} function-local imports")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
