"""In-process closed-loop evaluation in the ``home`` scene (PyBullet, no ROS).

``python -m rlstack_nav.evaluate --goals 20 --seed 0``

The :class:`~rlstack_nav.navigator.Navigator` (the same core the node runs) drives the simulated
mobile manipulator through ``set_base_velocity`` and ``step``; the depth camera feeds the obstacle
layer (so the small objects on the floor, which the map does not know, are avoided). Goals are
visited one after the other from wherever the robot ended, and are sampled with the seed among
*reachable* poses: free of the inflated map, connected to the robot on the map with the floor
objects added (ground truth, used for sampling and scoring only), clear of those objects, at least
``--min-distance`` away, random heading.

A goal succeeds when the navigator reports SUCCEEDED **and** the ground-truth pose is within
``--xy-tol`` m and ``--yaw-tol`` rad of it **and** the robot touched nothing but the floor on the way
(PyBullet contact points between the robot and any other body). Also reported: the smallest
distance between the robot's footprint rectangle and the static boxes, time to goal over the ideal
time (first plan's length at the speed limit; also with the turns in place at the turning speed) and
path length over the shortest 8-connected grid path. Output: JSON on stdout, a markdown table on
stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from typing import List, Optional, Sequence

import numpy as np

from rlstack_nav.grid import CostParams, Costmap
from rlstack_nav.navigator import Code, NavParams, Navigator
from rlstack_nav.obstacles import CameraModel, quat_to_matrix, yaw_from_quat
from rlstack_nav.planner import GridPlanner

#: base body footprint (m, base_link frame): body 0.50 x 0.34, wheels out to +-0.25 in y
FOOTPRINT = (-0.26, 0.26, -0.25, 0.25)


@dataclass
class GoalOutcome:
    index: int
    goal: List[float]
    code: str
    reason: str
    success: bool
    xy_error: float
    yaw_error: float
    collision: bool
    touched: List[str]
    min_clearance: float
    time_s: float
    ideal_time_s: float
    ideal_time_with_turns_s: float
    path_length: float
    shortest_grid_length: float
    replans: int
    controller_cycle_us: float


def robot_pose(sim) -> tuple:
    odom = sim.base_odometry()
    return float(odom.pose.position[0]), float(odom.pose.position[1]), yaw_from_quat(odom.pose.orientation)


class ContactMonitor:
    """What the mobile robot touches, the floor excluded (the backend's ``robot_contacts``:
    simulator truth, evaluation only)."""

    def __init__(self, sim) -> None:
        self.sim = sim

    def touching(self) -> List[str]:
        return self.sim.robot_contacts()


def footprint_clearance(pose: Sequence[float], boxes) -> float:
    """Smallest distance (m) between the base footprint rectangle at ``pose`` and the boxes
    (sampled on the rectangle's outline every 2 cm); negative inside."""
    x, y, yaw = pose
    x0, x1, y0, y1 = FOOTPRINT
    n = 14
    edge = np.concatenate([
        np.column_stack([np.linspace(x0, x1, n), np.full(n, y0)]),
        np.column_stack([np.linspace(x0, x1, n), np.full(n, y1)]),
        np.column_stack([np.full(n, x0), np.linspace(y0, y1, n)]),
        np.column_stack([np.full(n, x1), np.linspace(y0, y1, n)]),
    ])
    c, s = math.cos(yaw), math.sin(yaw)
    px = x + c * edge[:, 0] - s * edge[:, 1]
    py = y + s * edge[:, 0] + c * edge[:, 1]
    best = math.inf
    for b in boxes:
        dx = np.maximum(np.maximum(b.x_min - px, px - b.x_max), 0.0)
        dy = np.maximum(np.maximum(b.y_min - py, py - b.y_max), 0.0)
        inside = (px > b.x_min) & (px < b.x_max) & (py > b.y_min) & (py < b.y_max)
        d = np.where(inside, -1.0, np.hypot(dx, dy))
        best = min(best, float(d.min()))
    return best


def sample_goals(nav: Navigator, sim, count: int, seed: int, min_distance: float = 1.0,
                 object_clearance: float = 0.15) -> List[tuple]:
    """Reachable goals (see module docstring): list of (x, y, yaw)."""
    rng = np.random.default_rng(seed)
    grid, cm = nav.grid, nav.static
    floor_objs = np.array([o.pose.position[:2] for o in sim.ground_truth().values() if o.pose.position[2] < 0.2])
    free_r, free_c = np.nonzero(~cm.lethal)
    # reachable = connected on the map *with* the floor objects (ground truth, sampling only), which
    # the depth camera will find on the way
    from rlstack_nav.grid import points_to_mask

    if len(floor_objs):
        ring = np.array([[dx, dy] for dx in (-0.04, 0.0, 0.04) for dy in (-0.04, 0.0, 0.04)])
        marks = (floor_objs[:, None, :] + ring[None]).reshape(-1, 2)
        cm = Costmap(grid, nav.p.cost, points_to_mask(grid, marks))
    planner = GridPlanner(cm, smooth=False, densify=0.0)
    start = robot_pose(sim)
    goals: List[tuple] = []
    prev = start[:2]
    radius = nav.p.cost.robot_radius
    tries = 0
    while len(goals) < count:
        tries += 1
        if tries > 100000:
            raise RuntimeError("could not sample enough reachable goals")
        k = rng.integers(len(free_r))
        x, y = grid.cell_to_world(free_r[k], free_c[k])
        x, y = float(x), float(y)
        yaw = float(rng.uniform(-math.pi, math.pi))
        if math.hypot(x - prev[0], y - prev[1]) < min_distance:
            continue
        if len(floor_objs) and np.min(np.hypot(floor_objs[:, 0] - x, floor_objs[:, 1] - y)) < radius + object_clearance:
            continue
        if not planner.plan(start[:2], (x, y)).ok:
            continue
        goals.append((round(x, 3), round(y, 3), round(yaw, 3)))
        prev = (x, y)
    return goals


def camera_update(nav: Navigator, sim, pose, now: float, camera: str = "head_camera") -> None:
    frame = sim.camera_frame(camera)
    k = frame.intrinsics
    cam = CameraModel(k.fx, k.fy, k.cx, k.cy, k.width, k.height)
    rot = quat_to_matrix(frame.pose.orientation)
    nav.obstacles.update_from_depth(frame.depth, cam, rot, frame.pose.position, pose[:2], now)


def run_goal(sim, nav: Navigator, goal: Sequence[float], control_rate_hz: float = 30.0, depth_rate_hz: float = 3.0,
             timeout_s: float = 90.0, xy_tolerance: float = 0.0, yaw_tolerance: float = 0.0,
             contacts: Optional[ContactMonitor] = None, boxes=None) -> dict:
    """Drive to one goal; returns a dict with the result and measurements."""
    steps_per_cycle = max(1, int(round(1.0 / (control_rate_hz * sim.control_period))))
    cycle = steps_per_cycle * sim.control_period
    depth_every = max(1, int(round(control_rate_hz / depth_rate_hz))) if depth_rate_hz > 0 else 0
    t0 = sim.sim_time
    pose = robot_pose(sim)
    if depth_every:
        camera_update(nav, sim, pose, t0)
    refused = nav.set_goal(goal, pose, t0, xy_tolerance, yaw_tolerance)
    first_len = nav.last_plan.length if nav.last_plan is not None and nav.last_plan.ok else math.nan
    turns = math.nan
    if refused is None and len(nav.path) > 1:
        path = nav.path
        cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(path, axis=0).T))])
        a = path[min(int(np.searchsorted(cum, 0.3)), len(path) - 1)] - path[0]
        b = path[-1] - path[max(int(np.searchsorted(cum, cum[-1] - 0.3)) - 1, 0)]
        turn_in = abs((math.atan2(a[1], a[0]) - pose[2] + math.pi) % (2 * math.pi) - math.pi)
        turn_out = abs((goal[2] - math.atan2(b[1], b[0]) + math.pi) % (2 * math.pi) - math.pi)
        turns = turn_in + turn_out
    touched: set = set()
    min_clear = math.inf
    cycles = 0
    ctrl_time = 0.0
    result = refused
    while result is None:
        now = sim.sim_time
        if now - t0 > timeout_s:
            result = nav.abort(Code.TIMEOUT, f"evaluation timeout {timeout_s:.0f} s", pose)
            break
        pose = robot_pose(sim)
        if depth_every and cycles % depth_every == 0:
            camera_update(nav, sim, pose, now)
        tc = time.perf_counter()
        out = nav.step(pose, now)
        ctrl_time += time.perf_counter() - tc
        cycles += 1
        sim.set_base_velocity(out.v, out.w)
        sim.step(steps_per_cycle)
        if contacts is not None:
            touched.update(contacts.touching())
        if boxes is not None:
            min_clear = min(min_clear, footprint_clearance(robot_pose(sim), boxes))
        result = out.result
    sim.set_base_velocity(0.0, 0.0)
    sim.step(steps_per_cycle)  # let it settle one cycle before measuring
    x, y, yaw = robot_pose(sim)
    return {
        "result": result,
        "xy_error": math.hypot(goal[0] - x, goal[1] - y),
        "yaw_error": abs((goal[2] - yaw + math.pi) % (2 * math.pi) - math.pi),
        "touched": sorted(touched),
        "min_clearance": min_clear,
        "time_s": sim.sim_time - t0 - cycle,
        "first_path_length": first_len,
        "turns_rad": turns,
        "cycles": cycles,
        "controller_cycle_us": 1e6 * ctrl_time / max(1, cycles),
    }


def shortest_grid_length(nav: Navigator, start, goal) -> float:
    """Shortest 8-connected path length on the same lethal mask, no cost weighting, no shortcuts."""
    cm = Costmap(nav.grid, CostParams(**{**asdict(nav.p.cost), "cost_weight": 0.0}))
    res = GridPlanner(cm, smooth=False, densify=0.0).plan(start[:2], goal[:2])
    return res.grid_length if res.ok else math.nan


def evaluate(goals: int = 20, seed: int = 0, control_rate_hz: float = 30.0, depth_rate_hz: float = 3.0,
             xy_tol: float = 0.05, yaw_tol: float = 0.1, params: Optional[NavParams] = None,
             progress: bool = True, timeout_s: float = 90.0) -> dict:
    from rlstack_nav.home_map import home_map
    from sim_bridges import make_backend

    params = params or NavParams()
    t_wall = time.perf_counter()
    outcomes: List[GoalOutcome] = []
    with make_backend("pybullet", physics_rate_hz=240, control_rate_hz=60) as sim:
        sim.load_scene("home")
        sim.reset(seed)
        nav = Navigator(home_map(), params)
        goal_list = sample_goals(nav, sim, goals, seed)
        contacts = ContactMonitor(sim)
        boxes = sim.static_occupancy()
        for i, goal in enumerate(goal_list):
            start = robot_pose(sim)
            shortest = shortest_grid_length(nav, start, goal)
            r = run_goal(sim, nav, goal, control_rate_hz, depth_rate_hz, timeout_s, xy_tol, yaw_tol, contacts, boxes)
            res = r["result"]
            ok = (res.code == Code.SUCCEEDED and r["xy_error"] <= xy_tol and r["yaw_error"] <= yaw_tol
                  and not r["touched"])
            speed = params.controller.desired_linear_vel
            turn_speed = params.controller.rotate_to_heading_angular_vel
            ideal = r["first_path_length"] / speed
            o = GoalOutcome(i, list(goal), res.code.name, res.reason, ok, r["xy_error"], r["yaw_error"],
                            bool(r["touched"]), r["touched"], r["min_clearance"], r["time_s"],
                            ideal, ideal + r["turns_rad"] / turn_speed, r["first_path_length"], shortest, nav.replans,
                            r["controller_cycle_us"])
            outcomes.append(o)
            if progress:
                print(f"[{i + 1}/{len(goal_list)}] goal ({goal[0]:.2f}, {goal[1]:.2f}, {goal[2]:.2f}): {res.code.name}"
                      f" xy {o.xy_error * 100:.1f} cm yaw {o.yaw_error:.3f} rad t {o.time_s:.1f} s"
                      f" (ideal {o.ideal_time_s:.1f}) clear {o.min_clearance:.2f} m"
                      f"{' TOUCHED ' + ','.join(o.touched) if o.touched else ''}"
                      f"{'' if ok else ' FAIL: ' + res.reason}", file=sys.stderr, flush=True)
    n = len(outcomes)
    succ = [o for o in outcomes if o.success]
    reached = [o for o in outcomes if o.code == "SUCCEEDED"]

    def mean(xs):
        xs = [x for x in xs if math.isfinite(x)]
        return float(np.mean(xs)) if xs else math.nan

    summary = {
        "goals": n,
        "seed": seed,
        "succeeded": len(succ),
        "success_rate": len(succ) / n if n else math.nan,
        "collisions": sum(o.collision for o in outcomes),
        "mean_xy_error_cm": 100 * mean([o.xy_error for o in reached]),
        "max_xy_error_cm": 100 * max([o.xy_error for o in reached], default=math.nan),
        "mean_yaw_error_rad": mean([o.yaw_error for o in reached]),
        "max_yaw_error_rad": max([o.yaw_error for o in reached], default=math.nan),
        "min_footprint_clearance_m": min([o.min_clearance for o in outcomes], default=math.nan),
        "time_over_ideal_mean": mean([o.time_s / o.ideal_time_s for o in reached if o.ideal_time_s > 0]),
        "time_over_ideal_with_turns_mean": mean([o.time_s / o.ideal_time_with_turns_s for o in reached
                                                 if o.ideal_time_with_turns_s > 0]),
        "path_over_shortest_grid_mean": mean([o.path_length / o.shortest_grid_length for o in reached
                                              if o.shortest_grid_length > 0]),
        "controller_cycle_us_mean": mean([o.controller_cycle_us for o in outcomes]),
        "sim_time_s": sum(o.time_s for o in outcomes),
        "wall_time_s": time.perf_counter() - t_wall,
        "control_rate_hz": control_rate_hz,
        "depth_rate_hz": depth_rate_hz,
        "xy_tolerance_m": xy_tol,
        "yaw_tolerance_rad": yaw_tol,
    }
    return {"summary": summary, "outcomes": [asdict(o) for o in outcomes]}


def markdown(report: dict) -> str:
    s = report["summary"]
    lines = ["| # | goal (x, y, yaw) | result | xy err (cm) | yaw err (rad) | time (s) | ideal (s) "
             "| clearance (m) | touched |",
             "|---|---|---|---|---|---|---|---|---|"]
    for o in report["outcomes"]:
        g = o["goal"]
        lines.append(f"| {o['index']} | ({g[0]:.2f}, {g[1]:.2f}, {g[2]:.2f}) "
                     f"| {o['code']}{'' if o['success'] else ' (fail)'} "
                     f"| {100 * o['xy_error']:.1f} | {o['yaw_error']:.3f} | {o['time_s']:.1f} "
                     f"| {o['ideal_time_s']:.1f} "
                     f"| {o['min_clearance']:.2f} | {', '.join(o['touched']) or '-'} |")
    lines.append("")
    lines.append(f"**{s['succeeded']}/{s['goals']} succeeded ({100 * s['success_rate']:.0f} %)**, collisions "
                 f"{s['collisions']}, mean xy error {s['mean_xy_error_cm']:.1f} cm (max {s['max_xy_error_cm']:.1f}), "
                 f"mean yaw error {s['mean_yaw_error_rad']:.3f} rad (max {s['max_yaw_error_rad']:.3f}), "
                 f"time/ideal {s['time_over_ideal_mean']:.2f} (with turns at the turning speed "
                 f"{s['time_over_ideal_with_turns_mean']:.2f}), "
                 f"path/shortest grid {s['path_over_shortest_grid_mean']:.3f}, "
                 f"{s['sim_time_s']:.0f} s sim in {s['wall_time_s']:.0f} s wall")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rlstack_nav.evaluate", description=__doc__.splitlines()[0])
    ap.add_argument("--goals", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--control-rate", type=float, default=30.0, help="controller rate, Hz (divides 60)")
    ap.add_argument("--depth-rate", type=float, default=3.0, help="depth frames per second of sim time (0: off)")
    ap.add_argument("--xy-tol", type=float, default=0.05, help="success position tolerance, m")
    ap.add_argument("--yaw-tol", type=float, default=0.1, help="success heading tolerance, rad")
    ap.add_argument("--quiet", action="store_true", help="no per-goal progress lines")
    args = ap.parse_args(argv)
    report = evaluate(args.goals, args.seed, args.control_rate, args.depth_rate, args.xy_tol, args.yaw_tol,
                      progress=not args.quiet)
    print(markdown(report), file=sys.stderr)
    print(json.dumps(report, indent=1, default=float))
    return 0 if report["summary"]["success_rate"] >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
