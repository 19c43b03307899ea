#!/usr/bin/env python3
"""`make demo`: run rlstack's main job headless and write what happened to out/.

Today the main job is what the stack can do end to end so far (the fetch mission of the
design arrives with the later issues):

1. **smoke graph**: the runner starts launch/smoke.launch.yaml; a probe waits for the
   nodes by discovery, times QueryObjects round trips, then stops the graph with SIGINT
   and checks that it exits cleanly.
2. **PyBullet home scene** (when the sim bridge package is built): see `run_sim_stage`.

Output: out/demo_report.json, and a summary on stdout. Exit status 0 only if every stage
succeeded.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_smoke_stage(group, probe) -> dict:
    """Start the smoke graph through the runner; measure it; stop it with SIGINT."""
    from std_msgs.msg import UInt32

    from rlstack_interfaces.srv import QueryObjects

    t0 = time.monotonic()
    runner = group.start_graph(ROOT / "launch" / "smoke.launch.yaml", {"label": "yellow cube"}, name="smoke_runner")
    probe.collect("/smoke/smoke_talker/round_trips", UInt32, count=1, timeout=30)
    startup_s = time.monotonic() - t0

    latencies_ms = []
    request = QueryObjects.Request(text="where is the yellow cube", max_results=1)
    probe.call(QueryObjects, "/smoke/query_objects", request, timeout=10)  # discovery, not timed
    for _ in range(50):
        start = time.perf_counter()
        reply = probe.call(QueryObjects, "/smoke/query_objects", request, timeout=10)
        latencies_ms.append((time.perf_counter() - start) * 1e3)
    found = [(m.object.label, round(m.score, 2)) for m in reply.matches]

    runner.send_signal(signal.SIGINT)
    exit_code = runner.wait(timeout=30)
    ok = exit_code == 0 and bool(found) and found[0][0] == "yellow cube"
    return {
        "ok": ok,
        "graph": "launch/smoke.launch.yaml",
        "startup_to_first_round_trip_s": round(startup_s, 3),
        "query": request.text,
        "answer": found,
        "query_round_trip_ms": {"p50": round(statistics.median(latencies_ms), 3),
                                "p99": round(percentile(latencies_ms, 0.99), 3), "n": len(latencies_ms)},
        "runner_exit_code_after_sigint": exit_code,
    }


def main() -> int:
    from rlstack_testing import ProcessGroup, lease_domain_id
    from rlstack_testing.probe import RosProbe

    OUT.mkdir(exist_ok=True)
    report: dict = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "stages": {}}
    print("rlstack demo: headless, logs in out/demo_logs/")
    with lease_domain_id() as lease, ProcessGroup(lease.domain_id, OUT / "demo_logs") as group, \
            RosProbe(lease.domain_id, name="demo_probe") as probe:
        report["ros_domain_id"] = lease.domain_id
        for name, stage in (("smoke_graph", run_smoke_stage),):
            print(f"== stage: {name}")
            try:
                report["stages"][name] = stage(group, probe)
            except Exception as exc:  # a stage's failure is reported, the others still run
                report["stages"][name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            for key, value in report["stages"][name].items():
                print(f"   {key}: {value}")
    ok = all(stage["ok"] for stage in report["stages"].values())
    report["ok"] = ok
    path = OUT / "demo_report.json"
    with tempfile.NamedTemporaryFile("w", dir=OUT, delete=False, suffix=".tmp") as tmp:
        json.dump(report, tmp, indent=2)
    os.replace(tmp.name, path)
    print(f"rlstack demo: {'OK' if ok else 'FAILED'}; report: {path.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
