"""Nothing outside ``sim_bridges`` reaches into a simulator backend: a static scan (no imports).

Outside ``sim_bridges/`` code talks to a backend through the contract (``sim_bridges.contract.SimBackend``)
only. The scan fails on

* a private attribute of a backend object: ``sim._x``, ``backend._x``, ``self.sim._x``,
  ``env.sim._x``, ``self._sim._x`` ... (any ``_name`` read or written through a name that holds a
  backend);
* raw PyBullet on a backend's physics client: ``client_id`` or ``physicsClientId=`` in code that is
  not a test or a benchmark. ``PyBulletBackend.client_id`` and ``body_id`` are test-only accessors:
  tests (``*/test/``, ``tests/``) and benchmarks (``bench/``) may call PyBullet with them.

``tools/`` is exempt: one-off investigations (``tools/probes/``) read a backend's internals on
purpose, and the tools there are not part of the stack.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

REPO = Path(__file__).resolve().parents[1]

#: directories never scanned: the backends themselves, investigations, build outputs
EXEMPT = ("sim_bridges/", "tools/", ".venv/", "ros2_ws/build/", "ros2_ws/install/", "ros2_ws/log/", "log/",
          "out/", "docker/")
#: names that hold a backend wherever they appear (``sim``, ``self.sim``, ``env.sim``, ``self._sim`` ...)
BACKEND_NAMES = {"sim", "_sim", "backend", "_backend", "simulator"}
#: where raw PyBullet on a backend's client is allowed (test-only accessors)
CLIENT_ALLOWED = re.compile(r"(^|/)(test|tests|bench)/")

#: Known crossings still to be moved to the contract, ``(path, what) -> the contract call that
#: replaces it``. Empty: every caller uses the contract. The test fails when a listed one is fixed
#: and still listed here, so the list only shrinks.
PENDING: Dict[Tuple[str, str], str] = {}


def _python_files() -> Iterator[Path]:
    for path in sorted(REPO.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if not rel.startswith(EXEMPT) and "/build/" not in rel and "/install/" not in rel:
            yield path


def _holds_backend(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in BACKEND_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in BACKEND_NAMES
    return False


def crossings(rel: str, source: str) -> List[Tuple[int, str]]:
    """``(line, what)`` for every crossing of the boundary in one file's source."""
    out: List[Tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and _holds_backend(node.value)):
            out.append((node.lineno, f"{ast.unparse(node.value).split('.')[-1]}.{node.attr}"))
    if not CLIENT_ALLOWED.search(rel):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "client_id" and _holds_backend(node.value):
                out.append((node.lineno, "client_id"))
            elif isinstance(node, ast.keyword) and node.arg == "physicsClientId":
                out.append((node.value.lineno, "client_id"))
    return out


def test_the_scan_finds_each_kind_of_crossing():
    """The scanner itself: each pattern it must catch, and what it must leave alone."""
    caught = crossings("pkg/mod.py", (
        "sim._cid\nself.sim._cameras\nenv.sim._objects\nself._sim._robots\nbackend._spec = 1\n"
        "p.getNumBodies(physicsClientId=cid)\nsim.client_id\n"))
    assert [w for _, w in caught] == ["sim._cid", "sim._cameras", "sim._objects", "_sim._robots",
                                      "backend._spec", "client_id", "client_id"], caught
    assert crossings("pkg/mod.py", "self._sim = sim\nsim.__class__\nsim.ground_truth()\nself._cid\n") == []
    assert crossings("pkg/test/test_x.py", "sim.client_id\np.getNumBodies(physicsClientId=cid)\n") == []
    assert crossings("pkg/test/test_x.py", "sim._cid\n") == [(1, "sim._cid")]


def test_nothing_outside_sim_bridges_reaches_into_a_backend():
    found = {}
    for path in _python_files():
        rel = path.relative_to(REPO).as_posix()
        for line, what in crossings(rel, path.read_text(encoding="utf-8")):
            found.setdefault((rel, what), []).append(line)
    new = {k: v for k, v in found.items() if k not in PENDING}
    assert not new, "backend internals used outside sim_bridges (use the contract):\n" + "\n".join(
        f"  {rel}:{lines} {what}" for (rel, what), lines in sorted(new.items()))
    fixed = sorted(k for k in PENDING if k not in found)
    assert not fixed, f"fixed, so remove from PENDING: {fixed}"
