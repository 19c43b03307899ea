#!/usr/bin/env python3
"""Run every launch file's own header example, as a user copies it, and report what happened.

For each ``launch/*.launch.yaml`` every ``python -m rlstack_launch launch/X.launch.yaml [args]`` in
the header comments (e.g. ``Anywhere (this repo): source env.sh && python -m rlstack_launch ...``) is
run exactly as written -- the project's runner, which passes each node the same command line ``ros2 launch``
builds (``--ros-args -r __node:=... --params-file ... -p ...``). The graph runs until every node
is up and ``--run-s`` seconds more; then the terminal's Ctrl-C is imitated (SIGINT to the runner
and to every node at once, as a terminal signals its foreground process group under ``ros2
launch``) and every node must exit 0 with no traceback. For the fetch graph, the header's
``send_fetch`` line is run too and must end SUCCEEDED (exit 0).

    source env.sh && python tools/check_launch_examples.py [--only fetch] [--markdown out.md]

Prints one row per launch file and a JSON summary; exit status 0 when every example worked.
Each graph gets its own ROS_DOMAIN_ID. Run it on a quiet machine: the fetch example takes a
minute or two.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = re.compile(r"python -m rlstack_launch launch/[\w.]+\.launch\.yaml(?: [\w.-]+:=[^\s()]+)*")
NEEDS = re.compile(r"^#\s*needs:\s*(\S.*)$")   # a header line saying what the graph needs that this machine lacks
FETCH_CLIENT = re.compile(r"^#.*?(python -m rlstack_mission\.send_fetch .+?)\s*$")
BAD_OUTPUT = ("Traceback", "[FATAL]", "context is invalid", "killed by", "still running after SIGINT")


def header_examples(path: Path) -> tuple[list[str], list[str]]:
    """The runner example(s) and any send_fetch example in a launch file's leading comments."""
    graphs, clients = [], []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        found = EXAMPLE.findall(line)
        graphs += [g for g in found if g not in graphs]
        if not found and (m := FETCH_CLIENT.match(line)):
            clients.append(m.group(1))
    return graphs, clients


def header_needs(path: Path) -> str:
    """What a launch file's header says its graph needs (``# needs: ...``), or ''."""
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if (m := NEEDS.match(line)):
            return m.group(1)
    return ""


def _children(log: str) -> dict:
    return {name: int(pid) for name, pid in re.findall(r"started (\S+) \(pid (\d+)\)", log)}


def run_example(command: str, clients: list[str], domain: int, run_s: float, log_dir: Path) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    argv = [sys.executable if a == "python" else a for a in shlex.split(command)]
    log_path = log_dir / f"domain{domain}.log"
    t0 = time.monotonic()
    with open(log_path, "wb") as log_file:
        runner = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        row = {"command": command, "clients": []}
        time.sleep(run_s)
        for client in clients:
            c_argv = [sys.executable if a == "python" else a for a in shlex.split(client)]
            done = subprocess.run(c_argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
            result = None
            if "{" in done.stdout:
                try:
                    result = json.loads(done.stdout[done.stdout.index("{"):])
                except ValueError:
                    pass
            row["clients"].append({"command": client, "exit": done.returncode,
                                   "result": (result or {}).get("code_name"), "reason": (result or {}).get("reason"),
                                   "feedback_lines": sum(1 for ln in done.stdout.splitlines() if ln.startswith("["))})
        alive_before_stop = runner.poll() is None
        text = log_path.read_text(errors="replace")
        for pid in [runner.pid, *_children(text).values()]:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        try:
            code = runner.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            code = runner.wait()
    text = log_path.read_text(errors="replace")
    nodes = _children(text)
    clean = {n: f"{n} exited with code 0" in text for n in nodes}
    bad = [b for b in BAD_OUTPUT if b in text]
    row.update(nodes=sorted(nodes), alive_until_ctrl_c=alive_before_stop, runner_exit=code,
               nodes_exit_0=all(clean.values()) and bool(clean), bad_output=bad, wall_s=round(time.monotonic() - t0, 1),
               log=str(log_path))
    row["ok"] = (alive_before_stop and code == 0 and row["nodes_exit_0"] and not bad
                 and all(c["exit"] == 0 for c in row["clients"]))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="only launch files whose name contains this")
    ap.add_argument("--run-s", type=float, default=12.0, help="seconds the graph runs before the client / Ctrl-C")
    ap.add_argument("--markdown", default="", help="also write the table to this file")
    ap.add_argument("--log-dir", default=str(ROOT / "out" / "launch_examples"))
    a = ap.parse_args(argv)
    log_dir = Path(a.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, path in enumerate(sorted((ROOT / "launch").glob("*.launch.yaml"))):
        if a.only and a.only not in path.name:
            continue
        graphs, clients = header_examples(path)
        if not graphs and (needs := header_needs(path)):
            print(f"[SKIP] {path.name}: needs {needs}", flush=True)
            continue
        if not graphs:
            rows.append({"file": path.name, "ok": False, "command": "(no runner example in the header)"})
            continue
        for command in graphs:
            row = run_example(command, clients, 60 + i, a.run_s, log_dir)
            row["file"] = path.name
            rows.append(row)
            status = "OK" if row["ok"] else "FAILED"
            extra = "; ".join(f"{c['command'].split()[2]}: exit {c['exit']} {c['result']}" for c in row["clients"])
            print(f"[{status}] {path.name}: {command}  ->  nodes {', '.join(row['nodes'])} exit 0: "
                  f"{row['nodes_exit_0']}; runner {row['runner_exit']}{'; ' + extra if extra else ''}", flush=True)
    lines = ["| launch file | example run as written | nodes | Ctrl-C: all exit 0, no traceback | client |",
             "|---|---|---|---|---|"]
    for r in rows:
        client = "; ".join(f"`{c['command']}`: exit {c['exit']}, {c['result']} ({c['feedback_lines']} feedback lines)"
                           for c in r.get("clients", [])) or "-"
        lines.append(f"| `{r['file']}` | `{r['command']}` | {', '.join(r.get('nodes', []))} | "
                     f"{'yes' if r.get('nodes_exit_0') and not r.get('bad_output') else 'NO'} | {client} |")
    table = "\n".join(lines)
    print(table)
    print(json.dumps({"ok": all(r["ok"] for r in rows), "examples": len(rows)}))
    if a.markdown:
        Path(a.markdown).write_text(table + "\n")
    return 0 if rows and all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
