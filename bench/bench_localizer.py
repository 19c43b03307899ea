#!/usr/bin/env python3
"""Benchmark the localiser's core (rlstack_localization, no ROS): update time per depth frame.

Records the head camera's depth frames and the wheel odometry (default drift) while the robot in
PyBullet home turns in place and drives a loop, then times, per frame, what the node does on each
depth image: the virtual scan (``virtual_scan``) and one ``Localizer.update`` (Gauss-Newton, and
the correlative search when a frame does not match), repeated ``--repeat`` times over the frames.
Also times one local correlative search alone (initial pose / large error) and one wide search
(while LOST). One core, this process; median / p95 / max ms.

Output: JSON on stdout, a markdown table on stderr.

Usage::

    python bench/bench_localizer.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for extra in (os.path.join(ROOT, "ros2_ws", "src", "rlstack_localization"),
              os.path.join(ROOT, "ros2_ws", "src", "rlstack_nav"), os.path.join(ROOT, "sim_bridges")):
    if extra not in sys.path:
        sys.path.append(extra)

import numpy as np  # noqa: E402


def record(n_frames: int):
    from rlstack_localization.evaluate import _pose_matrix, _se2_matrix
    from rlstack_nav.evaluate import robot_pose
    from sim_bridges import make_backend
    from sim_bridges.wheel_odometry import OdometryErrors, WheelOdometry

    frames = []
    with make_backend("pybullet", physics_rate_hz=240, control_rate_hz=60) as sim:
        sim.load_scene("home")
        spec = next(r for r in sim.scene_spec.robots if r.diff_drive is not None).diff_drive
        odo = WheelOdometry(spec.wheel_radius, spec.track_width, OdometryErrors(), seed=1)
        truth0 = robot_pose(sim)
        odo.reset(truth0)
        js = sim.joint_state()
        il, ir = js.names.index(spec.left_wheel_joint), js.names.index(spec.right_wheel_joint)
        odo.update(js.position[il], js.position[ir], sim.sim_time)
        base_z = float(sim.base_odometry().pose.position[2])
        f0 = sim.camera_frame("head_camera")
        base_from_optical = np.linalg.inv(_se2_matrix(truth0, base_z)) @ _pose_matrix(f0.pose.position,
                                                                                      f0.pose.orientation)
        # a turn in place, then a loop of arcs in the free middle of the room; a frame every 6 steps (10 Hz)
        plan = [(0.0, 0.5)] * 380 + [(0.25, 0.25)] * 600
        v = w = 0.0
        for k, (tv, tw) in enumerate(plan):
            v += max(-1 / 60, min(1 / 60, tv - v))
            w += max(-3 / 60, min(3 / 60, tw - w))
            sim.set_base_velocity(v, w)
            sim.step(1)
            js = sim.joint_state()
            odo.update(js.position[il], js.position[ir], sim.sim_time)
            if k % 6 == 0:
                frames.append((sim.camera_frame("head_camera").depth.copy(), odo.pose, robot_pose(sim), sim.sim_time))
            if len(frames) >= n_frames:
                break
        k = f0.intrinsics
        return frames, (k.fx, k.fy, k.cx, k.cy), base_from_optical, base_z, truth0


def bench(n_frames: int = 160, repeat: int = 3) -> dict:
    from rlstack_localization.core import Localizer, LocalizerParams, se2_compose, virtual_scan
    from rlstack_nav.home_map import home_map

    frames, (fx, fy, cx, cy), base_from_optical, base_z, truth0 = record(n_frames)
    grid = home_map()
    params = LocalizerParams()
    scan_ms, update_ms, total_ms, errors = [], [], [], []
    searches = 0
    for _ in range(repeat):
        loc = Localizer(grid, params)
        loc.set_initial_pose(truth0, frames[0][1])
        for depth, odom, truth, t in frames:
            t0 = time.perf_counter()
            scan = virtual_scan(depth, fx, fy, cx, cy, base_from_optical, base_z, params, grid.resolution)
            t1 = time.perf_counter()
            loc.update(scan, odom, t)
            t2 = time.perf_counter()
            scan_ms.append(1e3 * (t1 - t0))
            update_ms.append(1e3 * (t2 - t1))
            total_ms.append(1e3 * (t2 - t0))
            est = se2_compose(loc.map_to_odom, odom)
            errors.append(math.hypot(est[0] - truth[0], est[1] - truth[1]))
        searches = loc.counts["searches"]
    # the searches alone, on the last frame's scan
    matcher = loc.matcher
    depth, odom, truth, _ = frames[-1]
    scan = virtual_scan(depth, fx, fy, cx, cy, base_from_optical, base_z, params, grid.resolution)
    local, wide = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        matcher.search(truth, scan, params.search_xy, params.search_yaw)
        local.append(1e3 * (time.perf_counter() - t0))
        t0 = time.perf_counter()
        matcher.search(truth, scan, params.lost_search_xy, params.lost_search_yaw)
        wide.append(1e3 * (time.perf_counter() - t0))

    def stats(xs):
        return {"median": float(np.median(xs)), "p95": float(np.percentile(xs, 95)), "max": float(np.max(xs))}

    return {
        "frames": len(frames), "repeat": repeat, "searches_per_pass": searches,
        "virtual_scan_ms": stats(scan_ms), "update_ms": stats(update_ms), "per_frame_ms": stats(total_ms),
        "local_search_ms": stats(local), "lost_search_ms": stats(wide),
        "position_error_cm": {k: 100 * v for k, v in stats(errors).items()},
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
    }


def markdown(r: dict) -> str:
    rows = [("virtual scan", r["virtual_scan_ms"]), ("update (match + state)", r["update_ms"]),
            ("per frame (scan + update)", r["per_frame_ms"]), ("local search alone", r["local_search_ms"]),
            ("wide search alone (LOST)", r["lost_search_ms"])]
    lines = ["| step | median ms | p95 ms | max ms |", "|---|---|---|---|"]
    lines += [f"| {name} | {s['median']:.2f} | {s['p95']:.2f} | {s['max']:.2f} |" for name, s in rows]
    e = r["position_error_cm"]
    lines.append(f"\n{r['frames']} frames x {r['repeat']}; position error against the truth median "
                 f"{e['median']:.1f} cm, p95 {e['p95']:.1f} cm, max {e['max']:.1f} cm")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(ap)
    ap.add_argument("--quick", action="store_true", help="40 frames, 1 pass")
    args = ap.parse_args(argv)
    r = bench(40, 1) if args.quick else bench()
    print(markdown(r), file=sys.stderr)
    print(json.dumps(r, indent=1))
    if args.record:
        record(args.record, r, command=command_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
