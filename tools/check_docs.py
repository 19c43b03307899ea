#!/usr/bin/env python3
"""Check that the documentation names only things that exist, and that every guide command is covered.

Reads README.md and every Markdown page under docs/ and checks:

* links: a relative link's file exists, and its ``#anchor`` is a heading of that page;
* file paths named in inline code or in code blocks (``launch/params/mission.yaml``,
  ``rlstack_nav/parameters.py``) exist in the repository (a path relative to a package is found
  by its tail; ``out/`` and paths with placeholders such as ``<task>`` are outputs or patterns);
* ``make <target>``: the Makefile has the target;
* ``*.launch.yaml``: the launch file exists in ``launch/``;
* ``X.launch.yaml name:=value`` in a command: the launch file declares ``name`` (its own
  arguments or an included file's, read with rlstack_launch's parser);
* ``-p name:=value`` after a node executable and ``ros2 param set /node name``: the node declares
  ``name`` (the declarations tools/gen_reference.py reads); a table whose first column is
  "parameter" names only parameters some node declares;
* ``python -m module`` and dotted names ``rlstack_*.x`` / ``sim_bridges.x``: the module exists,
  or the module before the last dot defines the name;
* in docs/guides/, every shell code block carries a marker line: ``# runs in: <test file>::<test
  function>`` (the file exists and defines the function) or ``# needs: <what>`` (what a test
  machine lacks: hardware, a ROS 2 distribution, a cluster, time);
* the generated tables of docs/reference/ are current (tools/gen_reference.py --check);
* the commands in each launch file's header comments name declared launch arguments and
  existing modules (tools/check_launch_examples.py runs the runner examples).

    source env.sh && python tools/check_docs.py          # one line per problem; exit 1 if any

It starts nothing and runs in seconds. tests/test_docs.py runs it.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Iterator, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gen_reference  # noqa: E402  (the parameter declarations, the generated blocks)

#: top-level folders and files whose paths must exist exactly as written
ANCHORED = ("launch/", "docs/", "tools/", "config/", "policies/", "maps/", "docker/", "requirements/",
            "ros2_ws/", "sim_bridges/", "tests/", "bench/")
ROOT_FILES = {"Makefile", "env.sh", "README.md", "LICENSE", "CHANGELOG.md"}
#: outputs of running something, not repository files
OUTPUT_PREFIXES = ("out/", ".venv/", "ros2_ws/build/", "ros2_ws/install/", "ros2_ws/log/", "ros2_ws/test_results/", "/")
PLACEHOLDER = re.compile(r"[<>*{}\[\]$]|\.\.\.")
PATH_TOKEN = re.compile(r"(?<![\w./<>*{}$-])((?:[\w.<>*{}$-]+/)+[\w.<>*{}$-]*[\w>*}])")
FILE_TOKEN = re.compile(r"^[\w.-]+/[\w./-]*\.(?:py|md|yaml|yml|xml|sh|txt|json|rviz|onnx|pgm|urdf|toml|cfg)$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
MAKE = re.compile(r"(?<![\w-])make ([a-z][a-z-]*)")
LAUNCH_FILE = re.compile(r"(?<![\w.-])([a-z_]+\.launch\.yaml)")
DOTTED = re.compile(r"^(?:rlstack_[a-z_]+|sim_bridges)(?:\.[A-Za-z_]\w*)+$")
SHELL = {"bash", "sh", "shell", "console", ""}


# ---------------------------------------------------------------------- repository facts
@lru_cache(maxsize=None)
def tracked() -> Tuple[str, ...]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return tuple(p for p in out.splitlines() if (ROOT / p).exists())


@lru_cache(maxsize=None)
def tracked_dirs() -> Set[str]:
    dirs = set()
    for p in tracked():
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    return dirs


@lru_cache(maxsize=None)
def make_targets() -> Set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


@lru_cache(maxsize=None)
def launch_args(file_name: str) -> Optional[Set[str]]:
    from rlstack_launch.launch_file import load

    path = ROOT / "launch" / file_name
    if not path.is_file():
        return None
    return set(load(str(path)).declared)


@lru_cache(maxsize=None)
def node_params(node: str) -> Optional[Set[str]]:
    try:
        rows = gen_reference.params_rows(node)
    except KeyError:
        return None
    return {r[0] for r in rows} | {"use_sim_time"}


@lru_cache(maxsize=None)
def all_params() -> Set[str]:
    """Every parameter any rlstack node declares."""
    names: Set[str] = {"use_sim_time"}
    for node in gen_reference.TABLES:
        names |= node_params(node) or set()
    return names


def module_exists(dotted: str) -> bool:
    """``a.b.c`` is a module, or ``a.b`` is a module (or package) that defines ``c``."""
    try:
        if importlib.util.find_spec(dotted) is not None:
            return True
    except (ImportError, ValueError, AttributeError):
        pass
    parent, _, name = dotted.rpartition(".")
    if not parent:
        return False
    try:
        spec = importlib.util.find_spec(parent)
    except (ImportError, ValueError, AttributeError):
        return False
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    return name in _defined_names(spec.origin)


@lru_cache(maxsize=None)
def _defined_names(path: str) -> Set[str]:
    tree = ast.parse(Path(path).read_text())
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            value = node.value
            if isinstance(value, ast.Dict):    # lazy exports: {"name": "module", ...}
                names.update(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
            elif isinstance(value, (ast.List, ast.Tuple)):   # __all__
                names.update(e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_exists(ref: str) -> Optional[str]:
    """None when ``<file>::<function>`` names an existing test, else why not."""
    if "::" not in ref:
        return f"'{ref}' is not <test file>::<test function>"
    file_part, func = ref.split("::", 1)
    func = func.split("[", 1)[0].split("::")[-1]
    path = ROOT / file_part
    if not path.is_file():
        return f"test file {file_part} does not exist"
    if not re.search(rf"^\s*def {re.escape(func)}\(", path.read_text(), re.M):
        return f"{file_part} defines no test function {func}"
    return None


# ---------------------------------------------------------------------- page parsing
def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> Set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def pages() -> List[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ---------------------------------------------------------------------- checks
def check_path(token: str, page: Path) -> Optional[str]:
    token = token.rstrip(".,:;)").split("::")[0].split("#")[0]
    if not token or PLACEHOLDER.search(token) or (token + "/").startswith(OUTPUT_PREFIXES) or "://" in token:
        return None
    if token in ROOT_FILES:
        return None if (ROOT / token).exists() else f"{token} does not exist"
    if token.startswith(ANCHORED):
        if token.rstrip("/") in tracked_dirs() or token in tracked() or (ROOT / token).exists() \
                or _stem_exists(token):
            return None
        return f"{token} does not exist"
    if not FILE_TOKEN.match(token):
        return None   # a topic, a ROS type, a URL path: not a file name
    if any(p == token or p.endswith("/" + token) for p in tracked()):
        return None
    return f"{token} matches no file in the repository"


def _stem_exists(token: str) -> bool:
    """``maps/home`` names ``maps/home.yaml`` + ``maps/home.pgm`` (a file stem, as tools take it)."""
    return any(p.startswith(token + ".") for p in tracked())


def check_link(target: str, page: Path) -> Optional[str]:
    if re.match(r"^[a-z]+:", target) or target.startswith("//"):
        return None
    file_part, _, anchor = target.partition("#")
    dest = (page.parent / file_part).resolve() if file_part else page
    try:
        dest.relative_to(ROOT)
    except ValueError:
        return f"link {target} leaves the repository"
    if not dest.exists():
        return f"link {target}: {dest.relative_to(ROOT)} does not exist"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"link {target}: no heading '#{anchor}' in {dest.relative_to(ROOT)}"
    return None


def check_command(line: str) -> List[str]:
    """Launch arguments, node parameters and modules in one shell command line."""
    problems = []
    words = line.split()
    for i, w in enumerate(words):
        if w == "-m" and i + 1 < len(words) and words[i - 1].endswith(("python", "python3")):
            mod = words[i + 1]
            if mod.startswith(("rlstack_", "sim_bridges")) and not module_exists(mod):
                problems.append(f"python -m {mod}: no such module")
    m = LAUNCH_FILE.search(line)
    if m:
        declared = launch_args(m.group(1))
        after = line[m.end():]
        if declared is not None:
            for name in re.findall(r"(?<![\w-])([a-z_][a-z0-9_]*):=", after):
                if name not in declared:
                    problems.append(f"{m.group(1)}: launch argument '{name}' is not declared")
    exe = re.search(r"lib/[a-z_]+/([a-z_]+)\s+--ros-args", line) or re.search(r"ros2 run [a-z_]+ ([a-z_]+)", line)
    if exe and " -p " in f" {line} ":
        declared = node_params(exe.group(1))
        if declared is not None:
            for name in re.findall(r"-p ([A-Za-z_][\w.]*):=", line):
                if name not in declared:
                    problems.append(f"{exe.group(1)}: parameter '{name}' is not declared")
    ps = re.search(r"ros2 param (?:set|get|describe) /([a-z_]+) ([a-z_]+)", line)
    if ps:
        declared = node_params(ps.group(1))
        if declared is not None and ps.group(2) not in declared:
            problems.append(f"{ps.group(1)}: parameter '{ps.group(2)}' is not declared")
    return problems


def joined_lines(body: str) -> Iterator[str]:
    """The block's lines with backslash continuations joined."""
    buf = ""
    for raw in body.splitlines():
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "
            continue
        yield buf + raw
        buf = ""
    if buf:
        yield buf


def check_page(page: Path, text: Optional[str] = None) -> List[str]:
    """Problems of ``page`` (a path under the repository; ``text``: its content, default read from it)."""
    rel = page.relative_to(ROOT)
    text = page.read_text() if text is None else text
    problems: List[str] = []

    def report(pos: int, what: str) -> None:
        problems.append(f"{rel}:{line_of(text, pos)}: {what}")

    blocks = [(m.start(), m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)

    for m in LINK.finditer(prose):
        if (why := check_link(m.group(1), page)):
            report(m.start(), why)
    for m in IMAGE.finditer(prose):
        if (why := check_link(m.group(1), page)):
            report(m.start(), why)
    for m in CODE_SPAN.finditer(prose):
        span = m.group(1)
        for p in PATH_TOKEN.findall(span):
            if (why := check_path(p, page)):
                report(m.start(), why)
        if span.split()[0] in ROOT_FILES and (why := check_path(span.split()[0], page)):
            report(m.start(), why)
        for t in MAKE.findall(span):
            if t not in make_targets():
                report(m.start(), f"make {t}: no such target in the Makefile")
        for f in LAUNCH_FILE.findall(span):
            if not (ROOT / "launch" / f).is_file():
                report(m.start(), f"{f}: no such launch file in launch/")
        if DOTTED.match(span) and not module_exists(span):
            report(m.start(), f"{span}: no such module or name")
        if span.startswith(("python ", "ros2 ", "make ")):
            for why in check_command(span):
                report(m.start(), why)

    # tables whose first column is "parameter": every name in it is declared by some node
    header = None
    for lineno, row in enumerate(prose.splitlines(), 1):
        if not row.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if header is None:
            header = cells[0].lower()
            continue
        if header == "parameter" and not set(cells[0]) <= set("-: "):
            for name in re.findall(r"`([a-z_][a-z0-9_]*)`", cells[0]):
                if name not in all_params():
                    problems.append(f"{rel}:{lineno}: parameter '{name}' is declared by no node")

    in_guides = rel.parts[:2] == ("docs", "guides")
    for start, lang, body in blocks:
        is_shell = lang in SHELL and lang != "" or (
            lang == "" and re.search(r"^(source|python|make|ros2|docker) ", body, re.M))
        if lang in ("yaml", "python", "mermaid", "text") or not is_shell and lang != "bash":
            continue
        for line in joined_lines(body):
            if line.lstrip().startswith("#"):
                continue
            for p in PATH_TOKEN.findall(line):
                if (why := check_path(p, page)):
                    report(start, why)
            for t in MAKE.findall(line):
                if t not in make_targets():
                    report(start, f"make {t}: no such target in the Makefile")
            for f in LAUNCH_FILE.findall(line):
                if not (ROOT / "launch" / f).is_file():
                    report(start, f"{f}: no such launch file in launch/")
            for why in check_command(line):
                report(start, why)
        if in_guides and lang in SHELL:
            markers = re.findall(r"^\s*# (runs in|needs): *(.*)$", body, re.M)
            if not markers:
                report(start, "a command block without '# runs in: <test>' or '# needs: <what>'")
            for kind, value in markers:
                if kind == "runs in" and (why := test_exists(value.strip())):
                    report(start, f"runs in: {why}")
                if kind == "needs" and not value.strip():
                    report(start, "'# needs:' says nothing")
    return problems


def check_generated() -> List[str]:
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_reference.py"), "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode == 0:
        return []
    return [ln for ln in out.stderr.splitlines() if ln.strip()] or ["tools/gen_reference.py --check failed"]


def check_launch_headers() -> List[str]:
    """The commands in each launch file's header comments (``python -m rlstack_launch ...``,
    ``ros2 launch ...``, ``send_fetch``; tools/check_launch_examples.py runs the runner examples)
    name declared launch arguments and existing modules. Checked statically here."""
    problems = []
    for path in sorted((ROOT / "launch").glob("*.launch.yaml")):
        for line in path.read_text().splitlines():
            if not line.startswith("#"):
                break
            if re.search(r"rlstack_launch|ros2 launch|python -m ", line):
                problems += [f"launch/{path.name} header: {why}" for why in check_command(line.lstrip("# "))]
    return problems


def check_all() -> List[str]:
    problems: List[str] = []
    for page in pages():
        problems += check_page(page)
    problems += check_launch_headers()
    problems += check_generated()
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    problems = check_all()
    for p in problems:
        print(p)
    print(f"check_docs: {len(pages())} pages, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
