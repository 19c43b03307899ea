#!/usr/bin/env python3
"""`make demo`: run rlstack's main job headless and write what happened to out/.

Today the main job is what the stack can do end to end so far (the fetch mission of the
design arrives with the later issues):

1. **smoke graph**: the runner starts launch/smoke.launch.yaml; a probe waits for the
   nodes by discovery, times QueryObjects round trips, then stops the graph with SIGINT
   and checks that it exits cleanly.
2. **PyBullet home scene over ROS**: the runner starts launch/sim.launch.yaml (home,
   realtime, headless). The demo drives the mobile base through /cmd_vel (1 m straight, a
   quarter turn, 0.5 m straight, closed loop on /odom), measures the camera rate, saves one camera
   frame (out/demo_camera.png), and checks that the watchdog stops the base once the
   commands stop.

Output: out/demo_report.json, out/demo_camera.png, and a summary on stdout. Exit status 0 only if every stage
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


def run_sim_stage(group, probe) -> dict:
    """Drive the home scene's base over ROS through the bridge, open loop, and measure."""
    import math

    import numpy as np
    from geometry_msgs.msg import Twist, Vector3
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Image

    from rlstack_sim.snapshots import write_png

    t0 = time.monotonic()
    runner = group.start_graph(ROOT / "launch" / "sim.launch.yaml",
                               {"scene": "home", "mode": "realtime", "seed": 0}, name="sim_runner")
    odom = probe.subscribe("/odom", Odometry)
    images = probe.subscribe("/head_camera/image_raw", Image, qos=2)
    probe.wait_for_messages(odom, 1, timeout=60)
    startup_s = time.monotonic() - t0
    cmd = probe.publisher("/cmd_vel", Twist)

    def pose() -> tuple[float, float, float]:
        p = odom.messages[-1].pose.pose
        yaw = 2.0 * math.atan2(p.orientation.z, p.orientation.w)
        return p.position.x, p.position.y, yaw

    def drive_until(linear: float, angular: float, done, timeout_s: float = 20.0) -> bool:
        """Publish a velocity at 20 Hz until ``done(pose)`` holds (closed loop on /odom, so a
        slow machine where sim time lags wall time still drives the same path)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if done(pose()):
                return True
            cmd.publish(Twist(linear=Vector3(x=linear), angular=Vector3(z=angular)))
            probe.spin_for(0.05)
        return False

    def moved_from(origin, metres):
        return lambda now: math.hypot(now[0] - origin[0], now[1] - origin[1]) >= metres

    start = pose()
    images.pop_all()
    cam_t0 = time.monotonic()
    legs_done = drive_until(0.4, 0.0, moved_from(start, 1.0))
    camera_hz = len(images) / (time.monotonic() - cam_t0)
    legs_done &= drive_until(0.0, math.pi / 4, lambda now: now[2] - start[2] >= math.radians(88.0))
    corner = pose()
    legs_done &= drive_until(0.4, 0.0, moved_from(corner, 0.5))
    moved = pose()

    # Stop publishing: the bridge's watchdog must bring the base to rest by itself.
    def at_rest() -> bool:
        twist = odom.messages[-1].twist.twist
        return abs(twist.linear.x) < 0.02 and abs(twist.angular.z) < 0.05
    try:
        probe.spin_until(at_rest, timeout=10.0, what="the base to stop after commands stopped")
        stopped = True
    except TimeoutError:
        stopped = False

    frame = images.messages[-1] if len(images) else None
    if frame is not None:
        rgb = np.frombuffer(bytes(frame.data), dtype=np.uint8).reshape(frame.height, frame.width, 3)
        write_png(OUT / "demo_camera.png", rgb)

    runner.send_signal(signal.SIGINT)
    exit_code = runner.wait(timeout=30)
    travelled = math.hypot(moved[0] - start[0], moved[1] - start[1])
    turned_deg = math.degrees(moved[2] - start[2])
    ok = exit_code == 0 and legs_done and stopped and frame is not None
    return {
        "ok": ok,
        "graph": "launch/sim.launch.yaml scene:=home mode:=realtime",
        "startup_to_first_odom_s": round(startup_s, 3),
        "start_pose_xy_yaw": [round(v, 3) for v in start],
        "end_pose_xy_yaw": [round(v, 3) for v in moved],
        "displacement_m": round(travelled, 3),
        "heading_change_deg": round(turned_deg, 1),
        "all_legs_driven": legs_done,
        "camera_rate_hz_while_driving": round(camera_hz, 2),
        "camera_frame": "out/demo_camera.png" if frame is not None else None,
        "stopped_by_watchdog": stopped,
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
        for name, stage in (("smoke_graph", run_smoke_stage), ("sim_home", run_sim_stage)):
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
