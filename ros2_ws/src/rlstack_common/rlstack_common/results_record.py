"""Results files: an evaluator's summary with the command, commit, date and hardware of its run.

An evaluator or benchmark given ``--record docs/results/<name>.json`` writes its own summary there
through :func:`record`, so a figure on the results page (``docs/results.md``, built by
``tools/results_page.py``) always comes with the run that produced it. A results file that exists
already keeps its page fields (``title``, ``section``, ``order``, ``figures``: which values of the
summary the page shows); everything about the run is replaced.

Pure Python (no rclpy): evaluators, benchmarks and tools share it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

#: the fields a results file keeps from its previous version (how the page shows it)
PAGE_FIELDS = ("title", "section", "order", "figures", "notes")

RECORD_HELP = ("also write the summary, with the command, commit, date and hardware of this run, to "
               "this results file (docs/results/<name>.json); tools/results_page.py builds docs/results.md "
               "from those files")


def add_record_argument(parser) -> None:
    """Adds ``--record PATH`` to an argparse parser."""
    parser.add_argument("--record", default="", metavar="PATH", help=RECORD_HELP)


def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def commit_of(root: Path) -> str:
    """``git rev-parse HEAD`` of ``root``, with ``-dirty`` when tracked files differ from it ("" outside git)."""
    head = _git(root, "rev-parse", "HEAD")
    if head and _git(root, "status", "--porcelain", "--untracked-files=no"):
        head += "-dirty"
    return head


def hardware() -> str:
    """One line: CPU model, logical cores, memory, GPUs (from nvidia-smi where it runs), OS."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    parts = [f"{cpu}, {os.cpu_count()} logical cores"]
    try:
        mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal"))
        parts.append(f"{mem_kb / 1024 ** 2:.0f} GiB RAM")
    except (OSError, StopIteration, ValueError):
        pass
    try:
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.split("\n")
        gpus = [g.strip() for g in gpus if g.strip()]
        parts.append(", ".join(gpus) if gpus else "no GPU")
    except (OSError, subprocess.SubprocessError):
        parts.append("no GPU")
    parts.append(f"{platform.system()} {platform.release()}")
    return "; ".join(parts)


def command_line(module: Optional[str] = None, argv: Optional[Sequence[str]] = None) -> str:
    """The command that ran: ``python -m <module> <args>`` or ``python <script> <args>`` (``--record`` kept)."""
    args = list(sys.argv[1:] if argv is None else argv)
    head = ["python", "-m", module] if module else ["python", os.path.relpath(sys.argv[0])]
    return shlex.join(head + args)


def record(path: os.PathLike | str, summary: Dict[str, Any], *, command: str,
           root: Optional[os.PathLike | str] = None, commit: Optional[str] = None) -> Path:
    """Writes ``summary`` to the results file ``path`` with ``command``, the commit, the UTC date and the
    hardware; page fields of an existing file are kept. Returns the path. ``commit``: the one the run
    started from (:func:`commit_of` at its start; a long run outlives commits made meanwhile), else
    the commit of ``root`` now."""
    path = Path(path)
    if root is None:   # the running script's folder: inside the repository whatever the working directory
        root = Path(os.path.abspath(sys.argv[0])).parent if sys.argv and sys.argv[0] else Path.cwd()
    root = Path(root)
    if not root.is_dir():
        root = root.parent
    old: Dict[str, Any] = {}
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = {}
    doc: Dict[str, Any] = {k: old[k] for k in PAGE_FIELDS if k in old}
    doc.setdefault("title", path.stem.replace("_", " "))
    doc.update({
        "source": "evaluator",
        "command": command,
        "commit": commit if commit is not None else commit_of(root),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "hardware": hardware(),
        "summary": summary,
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)
    print(f"recorded: {path}", file=sys.stderr)
    return path
