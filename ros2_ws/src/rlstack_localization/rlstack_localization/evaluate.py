"""The 20-goal home drive with drifting wheel odometry, with and without the localiser (no ROS).

``python -m rlstack_localization.evaluate --goals 20 --seed 0 [--no-localizer]``

The same drive as ``python -m rlstack_nav.evaluate`` (same goal sampler, same Navigator, same
success rule: SUCCEEDED, the *true* pose within 5 cm / 0.1 rad, no contact), but the robot knows
only what a robot knows: :class:`sim_bridges.wheel_odometry.WheelOdometry` (default errors, or
``--drift-scale``) integrated from the wheel angles, the head camera's depth (exact, or with the
robot-mode RGB-D noise: ``--depth-noise``; navigation's obstacle layer then gets the fetch graph's
noise allowances), and, with the
localiser, ``map -> odom`` from :class:`rlstack_localization.core.Localizer` updated at
``--localizer-rate`` Hz of sim time. The navigator and the obstacle layer see the estimated pose.

Reported: localisation error against the truth at every control cycle (median / p95 of the
position error, median / p95 / max of the heading error), navigation success, and the localiser's
update time per frame (median / p95, this process, one core). JSON on stdout, markdown on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from typing import List, Optional, Sequence

import numpy as np

from rlstack_localization.core import Localizer, LocalizerParams, se2_compose, virtual_scan, wrap
from rlstack_nav.evaluate import ContactMonitor, footprint_clearance, robot_pose, sample_goals
from rlstack_nav.navigator import Code, NavParams, Navigator
from rlstack_nav.obstacles import NOISY_DEPTH_ALLOWANCES, CameraModel, quat_to_matrix


def _pose_matrix(position, orientation) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = quat_to_matrix(orientation)
    m[:3, 3] = position
    return m


def _se2_matrix(pose, z: float) -> np.ndarray:
    m = np.eye(4)
    c, s = math.cos(pose[2]), math.sin(pose[2])
    m[:2, :2] = [[c, -s], [s, c]]
    m[:3, 3] = (pose[0], pose[1], z)
    return m


def evaluate(goals: int = 20, seed: int = 0, use_localizer: bool = True, drift_scale: float = 1.0,
             control_rate_hz: float = 30.0, depth_rate_hz: float = 3.0, localizer_rate_hz: float = 10.0,
             xy_tol: float = 0.05, yaw_tol: float = 0.1, timeout_s: float = 90.0, progress: bool = True,
             loc_params: Optional[LocalizerParams] = None, trace: Optional[list] = None,
             depth_noise: bool = False, noise_obstacles: bool = True) -> dict:
    from rlstack_nav.home_map import home_map
    from sim_bridges import make_backend
    from sim_bridges.sensor_noise import DepthNoise
    from sim_bridges.wheel_odometry import OdometryErrors, WheelOdometry

    e0 = OdometryErrors()
    errors = OdometryErrors(
        left_radius_scale=1 + drift_scale * (e0.left_radius_scale - 1),
        right_radius_scale=1 + drift_scale * (e0.right_radius_scale - 1),
        track_scale=1 + drift_scale * (e0.track_scale - 1),
        slip_xx=drift_scale * e0.slip_xx, slip_thth=drift_scale * e0.slip_thth, slip_ths=drift_scale * e0.slip_ths,
        yaw_bias=drift_scale * e0.yaw_bias)
    t_wall = time.perf_counter()
    pos_err: List[float] = []
    yaw_err: List[float] = []
    odo_pos_err: List[float] = []
    update_ms: List[float] = []
    outcomes = []
    states = {}
    with make_backend("pybullet", physics_rate_hz=240, control_rate_hz=60) as sim:
        sim.load_scene("home")
        sim.reset(seed)
        grid = home_map()
        nav_params = NavParams()
        if depth_noise and noise_obstacles:   # as the fetch graph configures navigation for the noisy depth
            obstacles = dataclasses.replace(nav_params.obstacles, **NOISY_DEPTH_ALLOWANCES)
            nav_params = dataclasses.replace(nav_params, obstacles=obstacles)
        nav = Navigator(grid, nav_params)
        goal_list = sample_goals(nav, sim, goals, seed)
        contacts = ContactMonitor(sim)
        boxes = sim.static_occupancy()
        spec = next(r for r in sim.scene_spec.robots if r.diff_drive is not None).diff_drive
        odo = WheelOdometry(spec.wheel_radius, spec.track_width, errors, seed=seed)
        truth0 = robot_pose(sim)
        odo.reset(truth0)
        js = sim.joint_state()
        il, ir = js.names.index(spec.left_wheel_joint), js.names.index(spec.right_wheel_joint)
        odo.update(js.position[il], js.position[ir], sim.sim_time)
        base_z = float(sim.base_odometry().pose.position[2])
        frame = sim.camera_frame("head_camera")
        base_from_optical = np.linalg.inv(_se2_matrix(truth0, base_z)) @ _pose_matrix(frame.pose.position,
                                                                                     frame.pose.orientation)
        k = frame.intrinsics
        cam = CameraModel(k.fx, k.fy, k.cx, k.cy, k.width, k.height)
        loc = Localizer(grid, loc_params or LocalizerParams()) if use_localizer else None
        if loc is not None:
            loc.set_initial_pose(truth0, odo.pose)
        map_to_odom = (0.0, 0.0, 0.0)
        noise = DepthNoise() if depth_noise else None
        noise_rng = np.random.default_rng([seed, 0xD3])

        steps_per_cycle = max(1, int(round(1.0 / (control_rate_hz * sim.control_period))))
        depth_every = max(1, int(round(control_rate_hz / depth_rate_hz)))
        loc_every = max(1, int(round(control_rate_hz / localizer_rate_hz)))
        cycles = 0

        def estimate():
            return se2_compose(map_to_odom, odo.pose)

        def sense(now):
            nonlocal map_to_odom
            want_loc = loc is not None and cycles % loc_every == 0
            want_depth = cycles % depth_every == 0
            if not (want_loc or want_depth):
                return
            exact = sim.camera_frame("head_camera")
            f = exact
            if noise is not None:   # the robot-mode depth (sim_bridges.sensor_noise defaults)
                f = dataclasses.replace(f, depth=noise.apply(f.depth, k.fx, k.fy, k.cx, k.cy, noise_rng)[0])
            if want_loc:
                t0 = time.perf_counter()
                scan = virtual_scan(f.depth, k.fx, k.fy, k.cx, k.cy, base_from_optical, base_z, loc.params,
                                    grid.resolution)
                res = loc.update(scan, odo.pose, now)
                update_ms.append(1e3 * (time.perf_counter() - t0))
                states[res.state.value] = states.get(res.state.value, 0) + 1
                map_to_odom = loc.map_to_odom
                if trace is not None:
                    trace.append((now, robot_pose(sim), estimate(), res.state.value, res.inlier_ratio, res.points,
                                  res.searched))
            if want_depth:
                m = _se2_matrix(estimate(), base_z) @ base_from_optical
                obstacle_depth = (f if noise_obstacles else exact).depth
                nav.obstacles.update_from_depth(obstacle_depth, cam, m[:3, :3], m[:3, 3], estimate()[:2], now)

        for i, goal in enumerate(goal_list):
            t0 = sim.sim_time
            sense(t0)
            result = nav.set_goal(goal, estimate(), t0, 0.0, 0.0)
            touched = set()
            clear = math.inf
            while result is None:
                now = sim.sim_time
                if now - t0 > timeout_s:
                    result = nav.abort(Code.TIMEOUT, f"evaluation timeout {timeout_s:.0f} s", estimate())
                    break
                sense(now)
                est = estimate()
                true = robot_pose(sim)
                pos_err.append(math.hypot(est[0] - true[0], est[1] - true[1]))
                yaw_err.append(abs(wrap(est[2] - true[2])))
                raw = se2_compose((0.0, 0.0, 0.0), odo.pose)
                odo_pos_err.append(math.hypot(raw[0] - true[0], raw[1] - true[1]))
                out = nav.step(est, now)
                cycles += 1
                sim.set_base_velocity(out.v, out.w)
                sim.step(steps_per_cycle)
                js = sim.joint_state()
                odo.update(js.position[il], js.position[ir], sim.sim_time)
                touched.update(contacts.touching())
                clear = min(clear, footprint_clearance(robot_pose(sim), boxes))
                result = out.result
            sim.set_base_velocity(0.0, 0.0)
            sim.step(steps_per_cycle)
            js = sim.joint_state()
            odo.update(js.position[il], js.position[ir], sim.sim_time)
            x, y, yaw = robot_pose(sim)
            xy_e = math.hypot(goal[0] - x, goal[1] - y)
            yaw_e = abs(wrap(goal[2] - yaw))
            ok = result.code == Code.SUCCEEDED and xy_e <= xy_tol and yaw_e <= yaw_tol and not touched
            outcomes.append({"index": i, "goal": list(goal), "code": result.code.name, "reason": result.reason,
                             "success": ok, "xy_error": xy_e, "yaw_error": yaw_e, "touched": sorted(touched),
                             "min_clearance": clear})
            if progress:
                print(f"[{i + 1}/{len(goal_list)}] goal ({goal[0]:.2f}, {goal[1]:.2f}, {goal[2]:.2f}): "
                      f"{result.code.name} true xy {100 * xy_e:.1f} cm yaw {yaw_e:.3f} rad; localisation error now "
                      f"{100 * pos_err[-1] if pos_err else 0:.1f} cm{'' if ok else ' FAIL: ' + result.reason}"
                      f"{' TOUCHED ' + ','.join(sorted(touched)) if touched else ''}", file=sys.stderr, flush=True)
    pe, ye = np.array(pos_err), np.degrees(np.array(yaw_err))
    n = len(outcomes)
    summary = {
        "goals": n, "seed": seed, "localizer": use_localizer, "drift_scale": drift_scale, "depth_noise": depth_noise,
        "depth_noise_in_obstacles": depth_noise and noise_obstacles,
        "succeeded": sum(o["success"] for o in outcomes),
        "success_rate": sum(o["success"] for o in outcomes) / n if n else math.nan,
        "collisions": sum(bool(o["touched"]) for o in outcomes),
        "loc_error_median_cm": 100 * float(np.median(pe)) if len(pe) else math.nan,
        "loc_error_p95_cm": 100 * float(np.percentile(pe, 95)) if len(pe) else math.nan,
        "loc_error_max_cm": 100 * float(np.max(pe)) if len(pe) else math.nan,
        "heading_error_median_deg": float(np.median(ye)) if len(ye) else math.nan,
        "heading_error_p95_deg": float(np.percentile(ye, 95)) if len(ye) else math.nan,
        "heading_error_max_deg": float(np.max(ye)) if len(ye) else math.nan,
        "odometry_only_error_median_cm": 100 * float(np.median(odo_pos_err)) if odo_pos_err else math.nan,
        "odometry_only_error_max_cm": 100 * float(np.max(odo_pos_err)) if odo_pos_err else math.nan,
        "distance_driven_m": odo.distance, "angle_turned_rad": odo.turned,
        "update_ms_median": float(np.median(update_ms)) if update_ms else math.nan,
        "update_ms_p95": float(np.percentile(update_ms, 95)) if update_ms else math.nan,
        "updates": len(update_ms), "localizer_states": states,
        "wall_time_s": time.perf_counter() - t_wall,
    }
    return {"summary": summary, "outcomes": outcomes}


def markdown(report: dict) -> str:
    s = report["summary"]
    return (f"| localiser | goals ok | collisions | loc. error median / p95 / max (cm) | heading median / p95 / max "
            f"(deg) | update ms median / p95 |\n|---|---|---|---|---|---|\n"
            f"| {'on' if s['localizer'] else 'off (odometry only)'} | {s['succeeded']}/{s['goals']} | "
            f"{s['collisions']} | {s['loc_error_median_cm']:.1f} / {s['loc_error_p95_cm']:.1f} / "
            f"{s['loc_error_max_cm']:.1f} | {s['heading_error_median_deg']:.2f} / {s['heading_error_p95_deg']:.2f} / "
            f"{s['heading_error_max_deg']:.2f} | {s['update_ms_median']:.1f} / {s['update_ms_p95']:.1f} |")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rlstack_localization.evaluate", description=__doc__.splitlines()[0])
    ap.add_argument("--goals", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-localizer", action="store_true", help="odometry only (map -> odom stays the identity)")
    ap.add_argument("--drift-scale", type=float, default=1.0, help="multiply every default odometry error")
    ap.add_argument("--localizer-rate", type=float, default=10.0, help="localiser updates per second of sim time")
    ap.add_argument("--depth-noise", action="store_true", help="RGB-D depth noise (sim_bridges.sensor_noise defaults)")
    ap.add_argument("--exact-obstacle-depth", action="store_true",
                    help="with --depth-noise: the obstacle layer gets the exact depth, the localiser the noisy one "
                         "(default: both get the noisy depth, and the obstacle layer the fetch graph's noise "
                         "allowances, "
                         "rlstack_nav.obstacles.NOISY_DEPTH_ALLOWANCES)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    report = evaluate(args.goals, args.seed, not args.no_localizer, args.drift_scale,
                      localizer_rate_hz=args.localizer_rate, progress=not args.quiet, depth_noise=args.depth_noise,
                      noise_obstacles=not args.exact_obstacle_depth)
    print(markdown(report), file=sys.stderr)
    print(json.dumps(report, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
