#!/usr/bin/env python3
"""Benchmark the policy node (rlstack_policy) over ROS 2, measured from a client process.

* ``latency``: observation-to-action latency across processes. The client publishes one
  ``/joint_states`` message, waits for the ``/cartpole/force`` the node computes from it
  (``trigger: message``), and repeats: p50/p99 of the round trip (two DDS hops, the node's
  assembly, checks, ONNX inference, shaping and publish), plus the node's own measure
  (message arrival -> action publish) from /diagnostics.
* ``jitter``: the node in ``trigger: timer`` on the wall clock at 50, 100 and 500 Hz while the
  client feeds ``/joint_states`` at 100 Hz; p99 of |tick interval - period| as the node
  measures it (from /diagnostics), and the same for action arrivals at the client.
* the node's resident memory (VmRSS and peak VmHWM from /proc) and CPU %.

Every run starts its own node process on a private ROS domain (rlstack_testing) and stops it.
Output: JSON on stdout, a markdown table on stderr.

Usage::

    source env.sh && python bench/bench_policy.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.experimental import EventsExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from rlstack_common.spin import spin_for, spin_until
from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup

REPO = Path(__file__).resolve().parents[1]
PARAMS = REPO / "launch" / "params" / "policy_cartpole.yaml"
TARGETS = {"latency_p99_ms": 2.0, "jitter_p99_ms_100hz": 1.0, "rss_mb": 150.0}


def proc_mem_mb(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024.0
    return out


def proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BenchClient:
    """A client node on its own context and EventsExecutor, spun by hand (``spin_once`` loops:
    EventsExecutor.spin() ran no callbacks in rclpy 9.1.2). Keeps the policy node's last
    diagnostics in ``diag``. Shared with bench_policy_pixels.py."""

    def __init__(self, domain_id: int, name: str, spin_step_s: float = 0.01) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.spin_step_s = spin_step_s
        self.diag: dict = {}
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for st in msg.status:
            if st.name.endswith(": policy"):
                self.diag = {kv.key: kv.value for kv in st.values}

    def spin_until(self, predicate, timeout: float, what: str) -> None:
        spin_until(self.executor, predicate, timeout, what, step=self.spin_step_s)

    def spin_for(self, seconds: float) -> None:
        spin_for(self.executor, seconds, step=0.01)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


class Client(BenchClient):
    """The cart-pole side: publishes /joint_states, records /cartpole/force with arrival times."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "bench_policy_client")
        self.forces: list = []   # (perf_counter at arrival, value)
        self.node.create_subscription(Float64, "/cartpole/force", self._on_force, 10)
        self.pub = self.node.create_publisher(JointState, "/joint_states", 10)

    def _on_force(self, msg: Float64) -> None:
        self.forces.append((time.perf_counter(), msg.data))

    def joint_state(self, angle: float = 0.02) -> JointState:
        return JointState(name=["slider_to_cart", "cart_to_pole"], position=[0.0, angle], velocity=[0.0, 0.0])


def start_node(group: ProcessGroup, **params):
    base = {"use_sim_time": False, "diagnostics_period_s": 0.5}
    base.update(params)
    return group.start_node("rlstack_policy", "policy_node", params_file=PARAMS, params=base)


def large_segment_profile() -> str:
    """A copy of the project's default 16 MiB-segment profile under another file name.

    The policy node runs with ``small_messages=True`` and so swaps the project default for the
    1 MiB profile; a differently named copy is kept as is, which shows what that saves.
    """
    src = Path(os.environ["RLSTACK_ROOT"]) / "config" / "fastdds_shm_only.xml"
    path = Path(tempfile.mkdtemp(prefix="bench_policy_")) / "fastdds_16mib_segment.xml"
    path.write_text(src.read_text())
    return str(path)


def bench_latency(samples: int, env: dict = None, priority: int = 0) -> dict:
    with lease_domain_id() as lease, ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_policy_")),
                                                  env=env) as group:
        proc = start_node(group, trigger="message", stale_periods=1000.0, realtime_priority=priority)
        client = Client(lease.domain_id)
        try:
            client.spin_until(lambda: client.pub.get_subscription_count() >= 1 and
                              client.node.count_publishers("/cartpole/force") >= 1, 30, "the policy node")
            rtts = []
            for i in range(samples + 50):
                n = len(client.forces)
                t0 = time.perf_counter()
                client.pub.publish(client.joint_state(0.02 if i % 2 else -0.02))
                client.spin_until(lambda: len(client.forces) > n, 5, "an action")
                if i >= 50:  # warm-up
                    rtts.append(client.forces[-1][0] - t0)
            client.spin_for(1.2)
            mem = proc_mem_mb(proc.pid)
            rtt = np.array(rtts) * 1e3
            return {"samples": samples, "rtt_p50_ms": float(np.percentile(rtt, 50)),
                    "rtt_p99_ms": float(np.percentile(rtt, 99)), "rtt_max_ms": float(rtt.max()),
                    "node_latency_p50_ms": float(client.diag.get("latency_p50_ms", "nan")),
                    "node_latency_p99_ms": float(client.diag.get("latency_p99_ms", "nan")),
                    "rss_mb": mem.get("VmRSS"), "rss_peak_mb": mem.get("VmHWM")}
        finally:
            client.close()


def bench_jitter(rate_hz: float, seconds: float, priority: int = 0) -> dict:
    with lease_domain_id() as lease, \
            ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_policy_"))) as group:
        proc = start_node(group, trigger="timer", rate_hz=float(rate_hz), stale_periods=1000.0,
                          realtime_priority=priority)
        client = Client(lease.domain_id)
        try:
            client.spin_until(lambda: client.pub.get_subscription_count() >= 1, 30, "the policy node")
            client.node.create_timer(0.01, lambda: client.pub.publish(client.joint_state()))
            client.spin_until(lambda: len(client.forces) > 10, 10, "actions")
            client.spin_for(1.0)  # settle
            client.forces.clear()
            cpu0, t0 = proc_cpu_s(proc.pid), time.monotonic()
            client.spin_for(seconds)
            cpu = (proc_cpu_s(proc.pid) - cpu0) / (time.monotonic() - t0) * 100
            client.spin_for(1.2)  # a fresh /diagnostics covering the window
            arrivals = np.array([t for t, _ in client.forces])
            intervals = np.diff(arrivals[arrivals <= arrivals[0] + seconds]) if len(arrivals) > 2 else np.array([0.0])
            rx_jitter = np.abs(intervals - 1.0 / rate_hz) * 1e3
            mem = proc_mem_mb(proc.pid)
            d = client.diag
            return {"rate_hz": rate_hz, "seconds": seconds, "realtime_priority": priority,
                    "achieved_rate_hz": float(d.get("achieved_rate_hz", "nan")),
                    "node_jitter_p99_ms": float(d.get("jitter_p99_ms", "nan")),
                    "node_overruns": int(d.get("overruns", -1)),
                    "rx_jitter_p99_ms": float(np.percentile(rx_jitter, 99)),
                    "rx_rate_hz": float(len(intervals) / intervals.sum()) if intervals.sum() > 0 else 0.0,
                    "node_cpu_percent": cpu, "rss_mb": mem.get("VmRSS"), "rss_peak_mb": mem.get("VmHWM")}
        finally:
            client.close()


def to_markdown(r: dict) -> str:
    lat = r["latency"]
    lines = [
        f"policy_node benchmark ({r['machine']}, {'quick' if r['quick'] else 'full'} run)",
        "",
        "| observation -> action, `trigger: message`, across processes | p50 | p99 | target |",
        "|---|---|---|---|",
        f"| client round trip (publish /joint_states -> receive /cartpole/force), {lat['samples']} samples "
        f"| {lat['rtt_p50_ms']:.3f} ms | {lat['rtt_p99_ms']:.3f} ms | p99 < 2 ms |",
        f"| inside the node (message arrival -> action published) | {lat['node_latency_p50_ms']:.3f} ms "
        f"| {lat['node_latency_p99_ms']:.3f} ms | |",
    ]
    if "latency_fifo" in r:
        f = r["latency_fifo"]
        lines += [f"| client round trip, node with `realtime_priority` (SCHED_FIFO) | {f['rtt_p50_ms']:.3f} ms "
                  f"| {f['rtt_p99_ms']:.3f} ms | p99 < 2 ms |",
                  f"| inside the node, SCHED_FIFO | {f['node_latency_p50_ms']:.3f} ms "
                  f"| {f['node_latency_p99_ms']:.3f} ms | |"]
    lines += [
        "",
        "| `trigger: timer` (wall clock) | scheduling | achieved Hz | node jitter p99 | jitter p99 at the client "
        "| overruns | node CPU % | RSS MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for j in r["jitter"]:
        sched = f"SCHED_FIFO {j['realtime_priority']}" if j["realtime_priority"] else "normal"
        lines.append(f"| {j['rate_hz']:g} Hz, {j['seconds']:g} s | {sched} | {j['achieved_rate_hz']:.1f} "
                     f"| {j['node_jitter_p99_ms']:.3f} ms | {j['rx_jitter_p99_ms']:.3f} ms | {j['node_overruns']} "
                     f"| {j['node_cpu_percent']:.0f} | {j['rss_mb']:.0f} |")
    large = r["latency_large_segment"]
    lines += ["", "| resident memory of the node (VmHWM, peak) | MB | target |", "|---|---|---|",
              f"| as shipped (small-message profile: 1 MiB SHM segment) | {r['rss_peak_mb']:.1f} | < 150 |",
              f"| same node forced onto the 16 MiB-segment profile | {large['rss_peak_mb']:.1f} | (comparison) |",
              f"| (latency with the 16 MiB profile: p50 {large['rtt_p50_ms']:.3f} ms, "
              f"p99 {large['rtt_p99_ms']:.3f} ms) | | |"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(parser)
    parser.add_argument("--quick", action="store_true", help="fewer samples, shorter windows (~20 s)")
    parser.add_argument("--priority", type=int, default=50,
                        help="also run the jitter windows with realtime_priority (SCHED_FIFO) N; 0: skip (default 50)")
    args = parser.parse_args()
    samples, seconds = (300, 3.0) if args.quick else (3000, 10.0)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
              "quick": args.quick, "targets": TARGETS}
    result["latency"] = bench_latency(samples)
    result["latency_large_segment"] = bench_latency(
        samples, env={"FASTDDS_DEFAULT_PROFILES_FILE": large_segment_profile()})
    if args.priority:
        result["latency_fifo"] = bench_latency(samples, priority=args.priority)
    result["jitter"] = [bench_jitter(rate, seconds, prio) for prio in (0, args.priority) if prio >= 0
                        for rate in (50.0, 100.0, 500.0)] if args.priority else \
        [bench_jitter(rate, seconds) for rate in (50.0, 100.0, 500.0)]
    result["rss_mb"] = max([result["latency"]["rss_mb"]] + [j["rss_mb"] for j in result["jitter"]])
    result["rss_peak_mb"] = max([result["latency"]["rss_peak_mb"]] + [j["rss_peak_mb"] for j in result["jitter"]])
    j100 = min((j for j in result["jitter"] if j["rate_hz"] == 100.0), key=lambda j: j["node_jitter_p99_ms"])
    result["meets_targets"] = {
        "latency_p99_ms": result["latency"]["rtt_p99_ms"] < TARGETS["latency_p99_ms"],
        "jitter_p99_ms_100hz": j100["node_jitter_p99_ms"] < TARGETS["jitter_p99_ms_100hz"],
        "rss_mb": result["rss_peak_mb"] < TARGETS["rss_mb"],
    }
    print(json.dumps(result, indent=2))
    if args.record:
        record(args.record, result, command=command_line())
    print(to_markdown(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
