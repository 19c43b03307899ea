#!/usr/bin/env python3
"""Find import cycles inside every Python package of the workspace, statically (stdlib ``ast``).

    python tools/import_cycles.py            # every package in ros2_ws/src and sim_bridges
    python tools/import_cycles.py PKG_DIR..  # only these package folders (those with setup.py)

An edge A -> B is any ``import`` of module B inside module A, at any depth (a function-level
import counts: a cycle hidden in a function is still a cycle in the design). ``from . import x``
is an edge to the submodule ``x`` when it is one, else to the package. Exit status 1 and one line
per cycle (a strongly connected component of the module graph) when there is any.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Dict, List, Set

REPO = Path(__file__).resolve().parents[1]


def package_dirs(repo: Path = REPO) -> List[Path]:
    """Every ament_python package folder: ros2_ws/src/* and sim_bridges (those with a setup.py)."""
    dirs = sorted(p for p in (repo / "ros2_ws" / "src").iterdir() if (p / "setup.py").is_file())
    return dirs + [repo / "sim_bridges"]


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def module_graph(package_dir: Path) -> Dict[str, Set[str]]:
    """module -> modules of the same package it imports, for every top-level Python package in
    ``package_dir`` (tests and build folders excluded)."""
    graph: Dict[str, Set[str]] = {}
    for top in sorted(d for d in package_dir.iterdir() if (d / "__init__.py").is_file() and d.name != "test"):
        mods = {_module_name(package_dir, p): p for p in top.rglob("*.py")}
        for name, path in mods.items():
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            deps: Set[str] = set()
            for node in ast.walk(tree):
                targets: List[str] = []
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = here[:len(here) - (node.level - 1)]
                        mod = ".".join(base + ([node.module] if node.module else []))
                    else:
                        mod = node.module or ""
                    targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
                for t in targets:
                    # "import a.b.c" depends on a.b.c (and, by Python's rules, loads a and a.b first;
                    # those are the module's own parents, which are not cycles of the design)
                    if t in mods and t != name:
                        deps.add(t)
            graph[name] = deps
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("packages", nargs="*", metavar="PKG_DIR",
                    help="package folders to check (default: every package in ros2_ws/src and sim_bridges)")
    dirs = [Path(a).resolve() for a in ap.parse_args(argv).packages] or package_dirs()
    found = 0
    for d in dirs:
        for comp in cycles(module_graph(d)):
            found += 1
            print(f"{d.name}: import cycle among {', '.join(comp)}")
    if not found:
        print(f"no import cycles in {len(dirs)} package(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
