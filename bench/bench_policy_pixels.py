#!/usr/bin/env python3
"""Benchmark the pixel policy (policies/ball_plate_pixels) served by the policy node over ROS 2.

* ``latency``: image-to-action latency across processes. The client publishes a
  ``/joint_states`` message and then one 320x240 ``rgb8`` frame of the ball-on-plate scene on
  ``/overhead_camera/image_raw`` (stamps 1/30 s apart, so the node's stack by stamp is always
  full), waits for the ``/ball_plate/angles`` the node computes (``trigger: message``) and
  repeats: p50/p99 of publish-image -> receive-action (two DDS hops with a 230 kB image, the
  node's decode + crop + area resize + stack, ONNX inference of the keypoint CNN, publish),
  plus the node's own measure from /diagnostics.
* ``camera``: the camera rate the loop needs vs what the bridge gives. The policy was trained
  on one frame per 30 Hz control step (stack 2, stride 1: consecutive frames 33 ms apart by
  stamp). The bridge (realtime, ``camera_rate_hz: 30``) and the policy node (message trigger)
  run together for ``--seconds``: the client measures the frame rate and stamp intervals it
  receives, the action rate, and reads the node's safe steps by reason (a gap in the stack,
  a stale image).

Output: JSON on stdout, a markdown table on stderr.

    source env.sh && python bench/bench_policy_pixels.py [--quick]
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
from bench_policy import BenchClient  # same folder: bench/ is the script's sys.path[0]
from geometry_msgs.msg import Vector3
from sensor_msgs.msg import Image, JointState

from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup

REPO = Path(__file__).resolve().parents[1]
PARAMS = REPO / "launch" / "params" / "policy_ball_plate_pixels.yaml"
BRIDGE = REPO / "launch" / "params" / "sim_bridge.yaml"
BUNDLE = REPO / "policies" / "ball_plate_pixels"
TOPIC = "/overhead_camera/image_raw"


def frames(n: int) -> list:
    """Real 320x240 frames of the scene (the bridge's camera), the ball rolling on a tilted plate."""
    from rlstack_learning.envs import BallPlateEnv

    env = BallPlateEnv()
    env.reset(seed=5)
    out = []
    for i in range(n):
        env.step(np.array([0.2 * np.sin(i / 5), 0.2 * np.cos(i / 7)], np.float32))
        out.append(np.asarray(env.sim.camera_frame("overhead_camera").rgb).copy())
    env.close()
    return out


class Client(BenchClient):
    """Publishes camera frames, records /ball_plate/angles (and, when listening, the bridge's images)."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "bench_pixels_client", spin_step_s=0.005)
        self.actions: list = []
        self.images: list = []      # (perf_counter, stamp s)
        self.node.create_subscription(Vector3, "/ball_plate/angles",
                                      lambda m: self.actions.append(time.perf_counter()), 10)

    def listen_images(self) -> None:
        self.node.create_subscription(Image, TOPIC, lambda m: self.images.append(
            (time.perf_counter(), m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec)), 10)


def bench_latency(samples: int) -> dict:
    imgs = frames(30)
    with lease_domain_id() as lease, \
            ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_pix_"))) as group:
        group.start_node("rlstack_policy", "policy_node", params_file=PARAMS, params={
            "bundle_path": str(BUNDLE), "use_sim_time": False, "trigger": "message", "stale_periods": 1000.0,
            "diagnostics_period_s": 0.5})
        client = Client(lease.domain_id)
        js_pub = client.node.create_publisher(JointState, "/joint_states", 10)
        img_pub = client.node.create_publisher(Image, TOPIC, 10)
        try:
            client.spin_until(lambda: img_pub.get_subscription_count() >= 1 and js_pub.get_subscription_count() >= 1
                              and client.node.count_publishers("/ball_plate/angles") >= 1, 30, "the policy node")
            rtts, warm = [], 20
            for i in range(-1, samples + warm):   # i = -1: the first frame of the stack (no action: hold, nothing yet)
                stamp = 100.0 + i / 30.0
                js = JointState(name=["plate_pitch", "plate_roll"], position=[0.01, -0.01], velocity=[0.0, 0.0])
                img = Image(height=240, width=320, encoding="rgb8", step=960)
                img.header.stamp.sec, img.header.stamp.nanosec = int(stamp), int(round((stamp % 1) * 1e9))
                img.header.frame_id = "overhead_camera_optical_frame"
                img.data = imgs[i % len(imgs)].tobytes()
                n = len(client.actions)
                js_pub.publish(js)
                t0 = time.perf_counter()
                img_pub.publish(img)
                if i < 0:
                    client.spin_for(0.5)
                    continue
                client.spin_until(lambda: len(client.actions) > n, 5, "an action")
                if i >= warm:
                    rtts.append(client.actions[-1] - t0)
            client.spin_for(1.2)
            rtt = np.array(rtts) * 1e3
            d = client.diag
            return {"samples": samples, "rtt_p50_ms": float(np.percentile(rtt, 50)),
                    "rtt_p99_ms": float(np.percentile(rtt, 99)), "rtt_max_ms": float(rtt.max()),
                    "node_latency_p50_ms": float(d.get("latency_p50_ms", "nan")),
                    "node_latency_p99_ms": float(d.get("latency_p99_ms", "nan")),
                    "node_safe_steps": d.get("safe_steps_by_reason", "?")}
        finally:
            client.close()


def bench_camera(seconds: float) -> dict:
    with lease_domain_id() as lease, \
            ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_pix_"))) as group:
        group.start_node("rlstack_sim", "sim_bridge", name="sim_bridge", params_file=BRIDGE, params={
            "scene": "ball_plate", "mode": "realtime", "seed": 3, "camera_enabled": True, "camera_rate_hz": 30.0,
            "control_rate_hz": 30.0, "publish_rate_hz": 30.0, "ground_truth_rate_hz": 30.0})
        group.start_node("rlstack_policy", "policy_node", params_file=PARAMS, params={
            "bundle_path": str(BUNDLE), "diagnostics_period_s": 0.5})
        client = Client(lease.domain_id)
        client.listen_images()
        try:
            client.spin_until(lambda: len(client.actions) > 10, 60, "actions from the policy")
            client.spin_for(1.0)
            client.images.clear()
            client.actions.clear()
            d0 = dict(client.diag)
            t0 = time.perf_counter()
            client.spin_for(seconds)
            wall = time.perf_counter() - t0
            client.spin_for(1.2)
            stamps = np.array([s for _, s in client.images])
            gaps = np.diff(stamps) * 1e3 if len(stamps) > 2 else np.array([np.nan])
            d = client.diag
            return {"seconds": seconds, "needed_hz": 30.0, "images_received_hz": len(client.images) / wall,
                    "image_sim_rate_hz": (float((len(stamps) - 1) / (stamps[-1] - stamps[0]))
                                          if len(stamps) > 2 else 0.0),
                    "stamp_interval_p50_ms": float(np.percentile(gaps, 50)),
                    "stamp_interval_p99_ms": float(np.percentile(gaps, 99)),
                    "stamp_intervals_not_33ms": int(np.sum(np.abs(gaps - 1e3 / 30) > 1e3 / 60)),
                    "actions_hz": len(client.actions) / wall,
                    "node_safe_steps_before": d0.get("safe_steps_by_reason", "?"),
                    "node_safe_steps_after": d.get("safe_steps_by_reason", "?"),
                    "node_steps": d.get("steps", "?")}
        finally:
            client.close()


def to_markdown(r: dict) -> str:
    lat, cam = r["latency"], r["camera"]
    return "\n".join([
        f"pixel policy benchmark ({r['machine']}, {'quick' if r['quick'] else 'full'} run)",
        "",
        "| image -> action, `trigger: message`, across processes | p50 | p99 | max |",
        "|---|---|---|---|",
        f"| client: publish 320x240 rgb8 frame -> receive /ball_plate/angles, {lat['samples']} samples "
        f"| {lat['rtt_p50_ms']:.2f} ms | {lat['rtt_p99_ms']:.2f} ms | {lat['rtt_max_ms']:.2f} ms |",
        f"| inside the node (message arrival -> action published) | {lat['node_latency_p50_ms']:.2f} ms "
        f"| {lat['node_latency_p99_ms']:.2f} ms | |",
        "",
        "| camera rate: needed vs given (bridge realtime + policy node, "
        f"{cam['seconds']:g} s) | value |",
        "|---|---|",
        f"| needed: one frame per control step (stack 2, stride 1) | {cam['needed_hz']:g} Hz, 33 ms apart by stamp |",
        f"| given: frames received at the client | {cam['images_received_hz']:.1f} Hz (wall) |",
        f"| given: frame stamps | {cam['image_sim_rate_hz']:.1f} Hz; "
        f"interval p50 {cam['stamp_interval_p50_ms']:.1f} ms, "
        f"p99 {cam['stamp_interval_p99_ms']:.1f} ms; {cam['stamp_intervals_not_33ms']} intervals off by > 17 ms |",
        f"| actions published | {cam['actions_hz']:.1f} Hz |",
        f"| node safe steps by reason (before -> after the window) | {cam['node_safe_steps_before']} -> "
        f"{cam['node_safe_steps_after']} |",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(parser)
    parser.add_argument("--quick", action="store_true", help="fewer samples, a shorter window")
    parser.add_argument("--seconds", type=float, default=0.0, help="camera window, s (default 20; quick 8)")
    args = parser.parse_args()
    samples = 200 if args.quick else 1000
    seconds = args.seconds or (8.0 if args.quick else 20.0)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
              "quick": args.quick}
    result["latency"] = bench_latency(samples)
    result["camera"] = bench_camera(seconds)
    print(json.dumps(result, indent=2))
    if args.record:
        record(args.record, result, command=command_line())
    print(to_markdown(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
