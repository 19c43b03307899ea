#!/usr/bin/env python3
"""Benchmark the sim_bridge node (rlstack_sim) over ROS 2, measured from a client process.

* ``lockstep``: control steps/s through the ``/sim_bridge/step`` service, one step per call
  (the worst case: one round trip per control step) and 10 steps per call, per scene;
  cameras off in lockstep (the default). ``request``: one step per call with the scene's
  command carried in the request and the object poses in the response (``with_objects``),
  what ``LockstepEnv(transport="request")`` sends. No topic has a subscriber here, so the
  bridge builds no per-step messages (lockstep publishes only what someone subscribes to);
  ``subscribed``: the 1-step rate again while a subscriber takes /joint_states, /tf and /clock.
  Calls go through ``call_async`` and an EventsExecutor, and again through
  ``rlstack_common.fast_lane.DirectClient`` (``direct``: a wait set on the client alone; what the
  lockstep training envs call with).
* ``batched``: a ``batch_bridge`` with 8 envs (cartpole, ball_plate): env steps/s through its
  ``~/step`` (``SimStepBatch``), one call per batch step with all 8 commands in the request
  (executor, and ``direct``).
* ``camera``: ``home`` in realtime mode with the 320x240 RGB-D head camera at the
  configured rate (15 Hz): frames/s received by a subscriber (RGB and depth), the
  realtime factor (sim time of /clock against wall time, and the bridge's own figure
  on /diagnostics), and the bridge's CPU % and RSS read from /proc.

Every run starts its own bridge process on a private ROS domain (rlstack_testing) and
stops it afterwards. Output: JSON on stdout, a markdown table on stderr.

Usage::

    source env.sh && python bench/bench_bridge.py [--quick] [--scenes ball_plate home]
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

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, JointState
from tf2_msgs.msg import TFMessage

from rlstack_common.fast_lane import DirectClient
from rlstack_common.spin import Deadline, spin_until
from rlstack_interfaces.srv import SimStep, SimStepBatch
from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup

REPO = Path(__file__).resolve().parents[1]
PARAMS = REPO / "launch" / "params" / "sim_bridge.yaml"
SCENES = ("cartpole", "ball_plate", "panda_table", "home")
#: a command each scene takes, as a step request carries it (topic, values)
REQUEST_COMMAND = {"cartpole": ("cartpole/force", [0.5]), "ball_plate": ("ball_plate/angles", [0.01, -0.01, 0.0]),
                   "panda_table": ("arm/gripper", [1.0]), "home": ("cmd_vel", [0.0, 0.0])}


class ProcStats:
    """CPU time and RSS of one process from /proc (Linux)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu_s(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime

    def rss_mb(self) -> float:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return float("nan")


class Client:
    """A client node on its own context and domain."""

    def __init__(self, domain_id: int) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("bench_client", context=self.context)
        if os.environ.get("RLSTACK_EXECUTOR", "events") == "single":
            self.executor = SingleThreadedExecutor(context=self.context)
        else:
            from rclpy.experimental import EventsExecutor

            self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)

    def spin_until(self, predicate, timeout: float, what: str) -> None:
        spin_until(self.executor, predicate, timeout, what, step=0.05)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def start_bridge(group: ProcessGroup, **params):
    proc = group.start_node("rlstack_sim", "sim_bridge", params_file=PARAMS, params=params)
    return proc


def executor_call(executor, cli):
    """A call through ``call_async``, the executor spun until it is answered."""
    def call(req):
        fut = cli.call_async(req)
        while not fut.done():
            executor.spin_once(timeout_sec=1.0)
        return fut.result()
    return call


def timed_calls(call, req, n_calls: int) -> float:
    """Seconds for ``n_calls`` step-service calls made one after another (each answered first);
    ``call``: :func:`executor_call`, or a ``DirectClient``'s (what the lockstep training envs use)."""
    t0 = time.perf_counter()
    for _ in range(n_calls):
        r = call(req)
        if not r.success:
            raise RuntimeError(r.message)
    return time.perf_counter() - t0


def bench_lockstep(scene: str, calls: int) -> dict:
    lease = lease_domain_id()
    with ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_bridge_"))) as group:
        proc = start_bridge(group, scene=scene, mode="lockstep", camera_enabled=False)
        client = Client(lease.domain_id)
        try:
            cli = client.node.create_client(SimStep, "/sim_bridge/step")
            direct = DirectClient(client.node, SimStep, "/sim_bridge/step")
            client.spin_until(lambda: cli.service_is_ready() and direct.service_is_ready(), 60, "the step service")

            def run(n_calls: int, steps: int, request: bool = False, direct_call: bool = False) -> float:
                req = SimStep.Request(steps=steps)
                if request:
                    topic, values = REQUEST_COMMAND[scene]
                    req.command_topics, req.command_values, req.with_objects = [topic], values, True
                call = (lambda r: direct.call(r, 5.0)) if direct_call else executor_call(client.executor, cli)
                return n_calls * steps / timed_calls(call, req, n_calls)

            run(max(20, calls // 10), 1)  # warm-up (discovery, caches)
            stats = ProcStats(proc.pid)
            cpu0, w0 = stats.cpu_s(), time.perf_counter()
            rate1 = run(calls, 1)
            cpu_pct = 100.0 * (stats.cpu_s() - cpu0) / (time.perf_counter() - w0)
            rate10 = run(max(20, calls // 5), 10)
            rate_req = run(calls, 1, request=True)
            rate_direct = run(calls, 1, direct_call=True)
            rate_req_direct = run(calls, 1, request=True, direct_call=True)
            direct.destroy()
            # the same 1-step calls while something listens to the state topics (what a topic-fed client costs)
            for topic, t in (("/joint_states", JointState), ("/tf", TFMessage), ("/clock", Clock)):
                client.node.create_subscription(t, topic, lambda m: None, 10)
            client.spin_until(lambda: client.node.count_subscribers("/clock") >= 1, 30, "our subscriptions")
            client.executor.spin_once(timeout_sec=0.5)
            run(max(20, calls // 10), 1)   # let the bridge match them
            rate_sub = run(calls, 1)
            return {"scene": scene, "steps_per_s_1_per_call": round(rate1, 1),
                    "steps_per_s_10_per_call": round(rate10, 1), "steps_per_s_request": round(rate_req, 1),
                    "steps_per_s_1_per_call_direct": round(rate_direct, 1),
                    "steps_per_s_request_direct": round(rate_req_direct, 1),
                    "steps_per_s_1_per_call_subscribed": round(rate_sub, 1), "bridge_cpu_percent": round(cpu_pct, 1),
                    "bridge_rss_mb": round(stats.rss_mb(), 1), "calls": calls}
        finally:
            client.close()
            group.stop_all()
            lease.release()


def bench_batched(scene: str, num_envs: int, calls: int) -> dict:
    lease = lease_domain_id()
    with ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_bridge_"))) as group:
        group.start_node("rlstack_sim", "batch_bridge", params_file=REPO / "launch" / "params" / "batch_bridge.yaml",
                         params={"scene": scene, "num_envs": num_envs})
        client = Client(lease.domain_id)
        try:
            cli = client.node.create_client(SimStepBatch, "/batch_bridge/step")
            direct = DirectClient(client.node, SimStepBatch, "/batch_bridge/step")
            client.spin_until(lambda: cli.service_is_ready() and direct.service_is_ready(), 60,
                              "the batch step service")
            topic, values = REQUEST_COMMAND[scene]
            req = SimStepBatch.Request(steps=1, command_topics=[topic], command_values=values * num_envs)

            def run(n_calls: int, direct_call: bool = False) -> float:
                call = (lambda r: direct.call(r, 5.0)) if direct_call else executor_call(client.executor, cli)
                return n_calls * num_envs / timed_calls(call, req, n_calls)

            run(max(20, calls // 10))
            rate = run(calls)
            rate_direct = run(calls, direct_call=True)
            direct.destroy()
            return {"scene": scene, "num_envs": num_envs, "env_steps_per_s": round(rate, 1),
                    "env_steps_per_s_direct": round(rate_direct, 1), "calls": calls}
        finally:
            client.close()
            group.stop_all()
            lease.release()


def bench_camera(seconds: float, camera_rate_hz: float) -> dict:
    lease = lease_domain_id()
    with ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_bridge_"))) as group:
        proc = start_bridge(group, scene="home", mode="realtime", camera_enabled=True, camera_rate_hz=camera_rate_hz)
        client = Client(lease.domain_id)
        try:
            got = {"rgb": [], "depth": [], "clock": [], "rtf": []}
            node = client.node
            node.create_subscription(Image, "/head_camera/image_raw", lambda m: got["rgb"].append(time.monotonic()), 10)
            node.create_subscription(Image, "/head_camera/depth/image_raw",
                                     lambda m: got["depth"].append(time.monotonic()), 10)
            node.create_subscription(Clock, "/clock", lambda m: got["clock"].append(
                (time.monotonic(), m.clock.sec + m.clock.nanosec * 1e-9)), 10)

            def on_diag(msg):
                values = {kv.key: kv.value for kv in msg.status[0].values}
                got["rtf"].append(float(values["realtime_factor"]))
            node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
            client.spin_until(lambda: len(got["rgb"]) >= 3 and len(got["depth"]) >= 3, 60, "camera frames")
            for v in got.values():
                v.clear()
            stats = ProcStats(proc.pid)
            cpu0, w0 = stats.cpu_s(), time.perf_counter()
            window = Deadline(seconds)
            client.spin_until(window.expired, seconds + 5, "the window")
            wall = time.perf_counter() - w0
            cpu_pct = 100.0 * (stats.cpu_s() - cpu0) / wall

            def rate(ts):
                return (len(ts) - 1) / (ts[-1] - ts[0]) if len(ts) > 1 else 0.0
            (cw0, cs0), (cw1, cs1) = got["clock"][0], got["clock"][-1]
            rtfs = got["rtf"][1:] or got["rtf"]
            return {
                "scene": "home", "camera": "head_camera 320x240 rgb8 + 32FC1", "camera_rate_hz": camera_rate_hz,
                "rgb_hz_received": round(rate(got["rgb"]), 2), "depth_hz_received": round(rate(got["depth"]), 2),
                "realtime_factor_clock": round((cs1 - cs0) / (cw1 - cw0), 3),
                "realtime_factor_diagnostics_mean": round(sum(rtfs) / len(rtfs), 3) if rtfs else None,
                "bridge_cpu_percent": round(cpu_pct, 1), "bridge_rss_mb": round(stats.rss_mb(), 1),
                "window_s": round(wall, 1),
            }
        finally:
            client.close()
            group.stop_all()
            lease.release()


def to_markdown(result: dict) -> str:
    lines = ["| lockstep scene | steps/s (1 step/call) | 1 step/call, direct client | steps/s (10 steps/call) | "
             "1 step/call, command in request + objects (executor / direct) | 1 step/call, state topics subscribed | "
             "bridge CPU % | bridge RSS MB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["lockstep"]:
        lines.append(f"| {r['scene']} | {r['steps_per_s_1_per_call']:.0f} | {r['steps_per_s_1_per_call_direct']:.0f} | "
                     f"{r['steps_per_s_10_per_call']:.0f} | {r['steps_per_s_request']:.0f} / "
                     f"{r['steps_per_s_request_direct']:.0f} | {r['steps_per_s_1_per_call_subscribed']:.0f} | "
                     f"{r['bridge_cpu_percent']:.0f} | {r['bridge_rss_mb']:.0f} |")
    if result.get("batched"):
        lines += ["", "| batch_bridge scene | envs | env steps/s (1 call per batch step) | direct client |",
                  "|---|---|---|---|"]
        for r in result["batched"]:
            lines.append(f"| {r['scene']} | {r['num_envs']} | {r['env_steps_per_s']:.0f} | "
                         f"{r['env_steps_per_s_direct']:.0f} |")
    c = result.get("camera")
    if c:
        lines += ["", "| realtime `home`, camera at {:g} Hz | value |".format(c["camera_rate_hz"]), "|---|---|",
                  f"| RGB frames/s received (320x240 rgb8) | {c['rgb_hz_received']:.2f} |",
                  f"| depth frames/s received (320x240 32FC1) | {c['depth_hz_received']:.2f} |",
                  f"| realtime factor (/clock vs wall) | {c['realtime_factor_clock']:.3f} |",
                  f"| realtime factor (/diagnostics, mean) | {c['realtime_factor_diagnostics_mean']} |",
                  f"| bridge CPU % (1 core = 100) | {c['bridge_cpu_percent']:.0f} |",
                  f"| bridge RSS MB | {c['bridge_rss_mb']:.0f} |"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(parser)
    parser.add_argument("--quick", action="store_true", help="short run (about 20 s)")
    parser.add_argument("--scenes", nargs="+", default=list(SCENES), choices=SCENES)
    parser.add_argument("--camera-rate", type=float, default=20.0, help="camera rate in the realtime run, Hz")
    parser.add_argument("--no-camera", action="store_true", help="skip the realtime camera run")
    parser.add_argument("--no-batched", action="store_true", help="skip the batch_bridge runs")
    args = parser.parse_args()
    heavy = {"panda_table", "home"}
    lockstep = []
    for scene in args.scenes:
        calls = (300 if scene in heavy else 1000) if args.quick else (1000 if scene in heavy else 5000)
        lockstep.append(bench_lockstep(scene, calls))
        print(f"[bench_bridge] lockstep {scene}: {lockstep[-1]['steps_per_s_1_per_call']:.0f} steps/s", file=sys.stderr)
    batched = [] if args.no_batched else [bench_batched(scene, 8, 300 if args.quick else 1500)
                                          for scene in ("cartpole", "ball_plate") if scene in args.scenes]
    result = {
        "batched": batched,
        "benchmark": "bench_bridge", "quick": args.quick, "host": platform.node(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "executor": os.environ.get("RLSTACK_EXECUTOR", "events"),
        "lockstep": lockstep,
    }
    if not args.no_camera:
        result["camera"] = bench_camera(5.0 if args.quick else 20.0, args.camera_rate)
    print(json.dumps(result, indent=2))
    if args.record:
        record(args.record, result, command=command_line())
    print(to_markdown(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
