"""``make eval-fetch`` stops on Ctrl-C or SIGTERM in the middle of a fetch, and takes its graph with it.

The evaluation exits with 130, summarises the layouts it finished, and stops every process of its
graph (the runner, in its own process group). rclpy's own signal handlers would only shut its
context down while the main thread waits on a fetch, so the evaluation installs its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO

from rlstack_testing.domain import lease_domain_id


def _processes_in_domain(domain_id: int) -> list:
    """(pid, command) of every process whose environment has ROS_DOMAIN_ID=domain_id."""
    needle = f"ROS_DOMAIN_ID={domain_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                found.append((int(entry), f.read().replace(b"\0", b" ").decode(errors="replace")[:120]))
        except OSError:
            continue   # gone meanwhile, or not ours to read
    return found


def test_sigterm_during_a_fetch_stops_the_evaluation_and_its_graph(tmp_path: Path):
    lease = lease_domain_id()
    env = {**os.environ, "ROS_DOMAIN_ID": str(lease.domain_id), "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "eval"
    proc = subprocess.Popen([sys.executable, "-m", "rlstack_mission.evaluate", "--layouts", "2", "--out", str(out)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 150.0
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("fetch graph ready") or time.monotonic() > deadline:
                break
        assert any(ln.startswith("fetch graph ready") for ln in lines), "".join(lines[-40:])
        time.sleep(8.0)   # the first layout applied and its fetch under way
        assert proc.poll() is None, "".join(lines[-40:])
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=90)
        lines.append(rest)
        text = "".join(lines)
        assert proc.returncode == 130, text[-3000:]
        assert "interrupted after 0 layout(s)" in text, text[-3000:]
        summary = json.loads((out / "results.json").read_text())["summary"]
        assert summary["interrupted"] is True and summary["layouts"] == 0
        left = _processes_in_domain(lease.domain_id)
        assert not left, f"the graph outlived the evaluation: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid, _ in _processes_in_domain(lease.domain_id):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        lease.release()
