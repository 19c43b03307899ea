"""The lint gate: ruff over the whole repository (ruff.toml), at the version pinned in requirements/constraints.txt.

* ``ruff check .`` passes: pyflakes, pycodestyle, import order and the complexity bound (max 15), with
  ruff.toml's per-file-ignores for what is not fixed yet.
* Complexity is checked function by function: every function over the bound is listed in
  tests/complexity_exceptions.toml with its complexity as a ceiling, so the list only shrinks (a
  listed function may not grow, and one back under the bound must leave the list).
* Each per-file-ignores entry says in a comment what is left in that file.

`make lint` runs this file (ruff takes about a second).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUFF_TOML = REPO / "ruff.toml"
EXCEPTIONS = REPO / "tests" / "complexity_exceptions.toml"
TOO_COMPLEX = re.compile(r"`(?P<name>.+)` is too complex \((?P<n>\d+) > (?P<bound>\d+)\)")


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def pinned_ruff() -> str:
    for line in (REPO / "requirements" / "constraints.txt").read_text().splitlines():
        if line.startswith("ruff=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError("requirements/constraints.txt pins no ruff")


def ruff_config() -> dict:
    return tomllib.loads(RUFF_TOML.read_text())


def listed_complexity() -> dict[tuple[str, str], int]:
    table = tomllib.loads(EXCEPTIONS.read_text())["complexity"]
    listed = {}
    for key, ceiling in table.items():
        path, sep, name = key.partition("::")
        assert sep and name and isinstance(ceiling, int), f"{EXCEPTIONS.name}: '{key}' is not \"path::function\" = N"
        listed[(path, name)] = ceiling
    return listed


def measured_complexity() -> dict[tuple[str, str], int]:
    """Every function over the bound, per-file-ignores left out: (path, function) -> complexity."""
    proc = ruff("check", "--select", "C901", "--config", "lint.per-file-ignores = {}", "--output-format", "json",
                "--exit-zero", ".")
    assert proc.returncode == 0, proc.stderr
    found: dict[tuple[str, str], int] = {}
    for v in json.loads(proc.stdout):
        m = TOO_COMPLEX.fullmatch(v["message"])
        assert m, v["message"]
        key = (Path(v["filename"]).resolve().relative_to(REPO).as_posix(), m["name"])
        found[key] = max(found.get(key, 0), int(m["n"]))
    return found


def test_ruff_is_the_pinned_version():
    proc = ruff("--version")
    assert proc.returncode == 0, f"ruff is not installed in this environment (make setup installs it): {proc.stderr}"
    assert proc.stdout.split() == ["ruff", pinned_ruff()], proc.stdout


def test_ruff_check_passes():
    proc = ruff("check", "--output-format", "concise", ".")
    assert proc.returncode == 0, (f"ruff check . found problems (fix them; `ruff check --fix FILE` fixes the "
                                  f"import order and unused imports):\n{proc.stdout}{proc.stderr}")


def test_functions_over_the_complexity_bound_are_listed_and_the_list_only_shrinks():
    listed, found = listed_complexity(), measured_complexity()
    problems = [f"{p}::{name} has complexity {n} (> 15): simplify it" for (p, name), n in sorted(found.items())
                if (p, name) not in listed]
    problems += [f"{p}::{name} has complexity {found[(p, name)]}, over its ceiling {c}: simplify it"
                 for (p, name), c in sorted(listed.items()) if found.get((p, name), 0) > c]
    problems += [f"{p}::{name} is within the bound now: remove it from {EXCEPTIONS.name}"
                 for (p, name) in sorted(listed) if (p, name) not in found]
    assert not problems, "\n".join(problems)
    for (p, name), c in sorted(listed.items()):
        if found[(p, name)] < c:
            warnings.warn(f"{p}::{name}: complexity {found[(p, name)]}, its ceiling can go down from {c}",
                          stacklevel=1)


def test_c901_is_ignored_exactly_in_the_files_with_listed_functions():
    ignores = ruff_config()["lint"]["per-file-ignores"]
    with_c901 = {path for path, codes in ignores.items() if "C901" in codes}
    listed_files = {path for path, _ in listed_complexity()}
    assert with_c901 == listed_files, (f"C901 ignored without a listed function: {sorted(with_c901 - listed_files)}; "
                                       f"listed functions whose file does not ignore C901: "
                                       f"{sorted(listed_files - with_c901)}")


def test_every_per_file_ignore_says_what_is_left():
    entries = [ln for ln in RUFF_TOML.read_text().partition("[lint.per-file-ignores]")[2].splitlines()
               if ln.strip() and not ln.lstrip().startswith("#")]
    assert entries, "ruff.toml has no [lint.per-file-ignores] entries to check"
    bare = [ln for ln in entries if "#" not in ln.partition("]")[2]]
    assert not bare, "per-file-ignores entries without a comment:\n" + "\n".join(bare)


def test_per_file_ignores_name_existing_files_and_codes_still_found():
    """A file cleaned up should leave the list: said as a warning, since the files are still being worked on."""
    ignores = ruff_config()["lint"]["per-file-ignores"]
    missing = [path for path in ignores if not (REPO / path).is_file()]
    assert not missing, f"per-file-ignores names files that do not exist: {missing}"
    proc = ruff("check", "--config", "lint.per-file-ignores = {}", "--output-format", "json", "--exit-zero", ".")
    assert proc.returncode == 0, proc.stderr
    found: dict[str, set] = {}
    for v in json.loads(proc.stdout):
        found.setdefault(Path(v["filename"]).resolve().relative_to(REPO).as_posix(), set()).add(v["code"])
    for path, codes in sorted(ignores.items()):
        unused = sorted(set(codes) - found.get(path, set()))
        if unused:
            warnings.warn(f"ruff.toml: {path} no longer needs {unused} in per-file-ignores", stacklevel=1)


def test_the_gate_finds_what_it_is_for(tmp_path):
    """ruff.toml's rules catch an unused import, a long line, unsorted imports and a complex function."""
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(16))
    src = ("import sys\nimport os\n\n\n"
           f"def f(x):\n{branches}\n    return '{'x' * 120}'\n")
    bad = tmp_path / "bad.py"
    bad.write_text(src)
    proc = ruff("check", "--config", str(RUFF_TOML), "--output-format", "json", "--exit-zero", str(bad))
    codes = {v["code"] for v in json.loads(proc.stdout)}
    assert {"F401", "E501", "I001", "C901"} <= codes, proc.stdout + proc.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
