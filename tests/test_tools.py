"""tools/ holds maintained tools only: each answers --help and something in the project runs or names it.

* Every file directly in tools/ answers ``--help`` with exit status 0 and a usage line (Python
  tools through argparse; shell scripts print theirs), without doing its work.
* Every one is referenced by the Makefile, another tool in tools/, or a test (tests/, a package's
  test/ folder, sim_bridges/test/): by its path (``tools/NAME``, ``"tools" / "NAME"``) or, in a
  test, by importing it by name.
* One-off investigations live in tools/probes/, each with a line in tools/probes/README.md.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / "tools"
TOOL_FILES = sorted(p for p in TOOLS.iterdir() if p.is_file() and p.suffix in (".py", ".sh"))


def test_tools_holds_only_tools():
    others = sorted(p.name for p in TOOLS.iterdir()
                    if p.name not in ("probes", "__pycache__") and p not in TOOL_FILES)
    assert not others, f"tools/ holds files that are not tools: {others}"
    assert len(TOOL_FILES) >= 10, [p.name for p in TOOL_FILES]


@pytest.mark.parametrize("tool", TOOL_FILES, ids=lambda p: p.name)
def test_each_tool_answers_help(tool):
    cmd = [sys.executable, str(tool), "--help"] if tool.suffix == ".py" else ["bash", str(tool), "--help"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{tool.name} --help exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    assert re.search(r"^usage: ", proc.stdout, re.MULTILINE), \
        f"{tool.name} --help printed no usage line:\n{proc.stdout}"


def _referencing_files() -> list[Path]:
    tests = [*(REPO / "tests").glob("*.py"), *(REPO / "ros2_ws" / "src").glob("*/test/*.py"),
             *(REPO / "sim_bridges" / "test").glob("*.py")]
    return [REPO / "Makefile", *TOOL_FILES, *tests]


def _references(text: str, tool: Path, in_test: bool) -> bool:
    name, stem = re.escape(tool.name), re.escape(tool.stem)
    patterns = [rf"tools/{name}\b", rf"""["']tools["']\s*/\s*["']{name}["']"""]
    if in_test and tool.suffix == ".py":
        patterns += [rf"^\s*import {stem}\b", rf"^\s*from {stem} import ", rf"""_tool\(["']{stem}["']\)"""]
    return any(re.search(p, text, re.MULTILINE) for p in patterns)


@pytest.mark.parametrize("tool", TOOL_FILES, ids=lambda p: p.name)
def test_each_tool_is_run_or_named_by_make_a_tool_or_a_test(tool):
    own_test = Path(__file__).resolve()
    for path in _referencing_files():
        if path in (tool, own_test):
            continue
        if _references(path.read_text(), tool, in_test=path.parent.name in ("tests", "test")):
            return
    pytest.fail(f"tools/{tool.name} is referenced by no make target, tool or test: give it one, or move it to "
                f"tools/probes/ with a line in tools/probes/README.md")


def test_every_probe_has_its_line_in_the_readme():
    readme = (TOOLS / "probes" / "README.md").read_text()
    probes = sorted(p.name for p in (TOOLS / "probes").glob("*.py"))
    rows = re.findall(r"^\| `([^`]+)` \|", readme, re.MULTILINE)
    assert sorted(rows) == probes, f"tools/probes/README.md lists {sorted(rows)}, the folder holds {probes}"


def test_the_reference_check_tells_a_reference_from_a_mention():
    tool = TOOLS / "lock.py"
    assert _references("\t@python tools/lock.py\n", tool, in_test=False)
    assert _references('SCRIPT = REPO / "tools" / "lock.py"\n', tool, in_test=True)
    assert _references("import lock  # noqa: E402\n", tool, in_test=True)
    assert not _references("import lock\n", tool, in_test=False)
    assert not _references("the lock is held\n", tool, in_test=True)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
