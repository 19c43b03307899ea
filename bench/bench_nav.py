#!/usr/bin/env python3
"""Benchmark rlstack_nav's pure cores (no ROS).

* ``controller``: one control cycle of the Navigator (collision check of the next 1.5 m against map
  and 200 obstacle cells + regulated pure pursuit) and of the bare pure pursuit, on the home map,
  driving a kinematic robot along a real plan; median / p95 / max microseconds.
* ``planner_200``: A* + shortcutting on a 200 x 200 grid (0.05 m, 10 x 10 m, seeded random
  boxes, robot radius 0.25 m), corner-to-corner and random pairs: median / max ms, expansions,
  and the costmap build (distance field + inflation) time.
* ``path_ratio``: returned path length / shortest 8-connected grid path on the same lethal cells
  without the cost weighting (below 1: the any-angle shortcuts beat the grid; above: detours
  the inflation cost asks for). On the 200 x 200 grid and in home.
* ``time_to_goal``: closed loop in PyBullet home (rlstack_nav.evaluate): time to goal / ideal time
  (first path's length at desired_linear_vel), and / ideal including the turns in place at
  rotate_to_heading_angular_vel; plus success and errors.

Output: JSON on stdout, a markdown table on stderr.

Usage::

    python bench/bench_nav.py [--quick]
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
for extra in (os.path.join(ROOT, "ros2_ws", "src", "rlstack_nav"), os.path.join(ROOT, "sim_bridges")):
    if extra not in sys.path:
        sys.path.append(extra)

import numpy as np  # noqa: E402

from rlstack_nav.controller import RegulatedPurePursuit, wrap_angle  # noqa: E402
from rlstack_nav.grid import CostParams, Costmap, OccupancyGrid  # noqa: E402
from rlstack_nav.home_map import home_map  # noqa: E402
from rlstack_nav.navigator import NavParams, Navigator  # noqa: E402
from rlstack_nav.planner import GridPlanner  # noqa: E402


def stats_us(samples):
    a = np.asarray(samples) * 1e6
    return {"median_us": float(np.median(a)), "p95_us": float(np.percentile(a, 95)), "max_us": float(a.max()),
            "n": int(len(a))}


def bench_controller(cycles: int) -> dict:
    nav = Navigator(home_map(), NavParams())
    rng = np.random.default_rng(0)
    # 200 obstacle cells somewhere in free space away from the route (they are checked, not hit)
    free = np.argwhere(~nav.static.lethal)
    pick = free[rng.choice(len(free), 200, replace=False)]
    xs, ys = nav.grid.cell_to_world(pick[:, 0], pick[:, 1])
    pts = np.column_stack([xs, ys])
    pts = pts[np.abs(pts[:, 1] - 0.25) > 1.2]  # beside the route y ~ 0..0.5, checked but not hit
    nav.obstacles.add_points(pts, 0.0)
    goal = (3.3, 0.0, 0.0)
    pose = (-1.5, 0.5, 0.0)
    nav_t, rpp_t = [], []
    dt = 1.0 / 30
    t = 0.0
    done = 0
    while len(nav_t) < cycles:
        if not nav.active:
            res = nav.set_goal(goal if done % 2 == 0 else (-1.5, 0.5, math.pi), pose, t)
            assert res is None, res
            done += 1
        t0 = time.perf_counter()
        out = nav.step(pose, t)
        nav_t.append(time.perf_counter() - t0)
        x, y, th = pose
        pose = (x + out.v * math.cos(th) * dt, y + out.v * math.sin(th) * dt, wrap_angle(th + out.w * dt))
        t += dt
    # the bare controller on the same kind of path
    ctrl = RegulatedPurePursuit()
    path = nav.planner.plan((-1.5, 0.5), (3.3, 0.0)).path
    ctrl.set_path(path, 0.0)
    pose = (-1.5, 0.5, 0.0)
    for _ in range(cycles):
        t0 = time.perf_counter()
        out = ctrl.compute(pose, dt, 0.4)
        rpp_t.append(time.perf_counter() - t0)
        if out.done:
            ctrl.set_path(path, 0.0)
            pose = (-1.5, 0.5, 0.0)
            continue
        x, y, th = pose
        pose = (x + out.v * math.cos(th) * dt, y + out.v * math.sin(th) * dt, wrap_angle(th + out.w * dt))
    return {"navigator_cycle": stats_us(nav_t), "pure_pursuit_compute": stats_us(rpp_t),
            "obstacle_cells": int(nav.obstacles.count())}


def random_grid(seed: int, n: int = 200, res: float = 0.05, boxes: int = 60) -> OccupancyGrid:
    rng = np.random.default_rng(seed)
    g = OccupancyGrid(np.zeros((n, n), np.int8), res)
    for _ in range(boxes):
        r, c = rng.integers(0, n - 20, size=2)
        h, w = rng.integers(3, 20, size=2)
        g.data[r:r + h, c:c + w] = 100
    g.data[:12, :12] = 0
    g.data[-12:, -12:] = 0
    return g


def bench_planner(pairs: int) -> dict:
    g = random_grid(1)
    params = CostParams(robot_radius=0.25, inflation_radius=0.6, cost_weight=2.0, cost_scaling_factor=5.0)
    t0 = time.perf_counter()
    cm = Costmap(g, params)
    build = time.perf_counter() - t0
    plain = Costmap(g, CostParams(**{**params.__dict__, "cost_weight": 0.0}))
    planner = GridPlanner(cm)
    ref = GridPlanner(plain, smooth=False, densify=0.0)
    rng = np.random.default_rng(2)
    free = np.argwhere(~cm.lethal)
    cases = [((0.3, 0.3), (9.7, 9.7))]
    while len(cases) < pairs:
        a, b = free[rng.choice(len(free), 2, replace=False)]
        pa = tuple(float(v) for v in g.cell_to_world(*a))
        pb = tuple(float(v) for v in g.cell_to_world(*b))
        if math.hypot(pa[0] - pb[0], pa[1] - pb[1]) > 4.0:
            cases.append((pa, pb))
    times, ratios, exps, fails = [], [], [], 0
    corner = None
    for start, goal in cases:
        res = planner.plan(start, goal)
        if not res.ok:
            fails += 1
            continue
        times.append(res.time_s)
        exps.append(res.expansions)
        short = ref.plan(start, goal)
        ratios.append(res.length / short.grid_length)
        if corner is None:
            corner = {"time_ms": 1000 * res.time_s, "expansions": res.expansions, "length_m": res.length,
                      "shortest_grid_m": short.grid_length}
    t = np.asarray(times) * 1000
    return {"grid": "200 x 200 at 0.05 m, 60 random boxes, robot_radius 0.25 m", "costmap_build_ms": 1000 * build,
            "plans": len(times), "unreachable_pairs": fails, "median_ms": float(np.median(t)),
            "max_ms": float(t.max()), "median_expansions": float(np.median(exps)), "corner_to_corner": corner,
            "path_over_shortest_grid": {"mean": float(np.mean(ratios)), "min": float(np.min(ratios)),
                                        "max": float(np.max(ratios))}}


def bench_home_path_ratio(pairs: int) -> dict:
    nav = Navigator(home_map(), NavParams())
    plain = Costmap(nav.grid, CostParams(**{**nav.p.cost.__dict__, "cost_weight": 0.0}))
    ref = GridPlanner(plain, smooth=False, densify=0.0)
    rng = np.random.default_rng(3)
    free = np.argwhere(~nav.static.lethal)
    ratios, times = [], []
    while len(ratios) < pairs:
        a, b = free[rng.choice(len(free), 2, replace=False)]
        pa = tuple(float(v) for v in nav.grid.cell_to_world(*a))
        pb = tuple(float(v) for v in nav.grid.cell_to_world(*b))
        res = nav.planner.plan(pa, pb)
        if not res.ok or math.hypot(pa[0] - pb[0], pa[1] - pb[1]) < 1.5:
            continue
        ratios.append(res.length / ref.plan(pa, pb).grid_length)
        times.append(res.time_s)
    return {"pairs": pairs, "mean": float(np.mean(ratios)), "min": float(np.min(ratios)), "max": float(np.max(ratios)),
            "plan_median_ms": float(np.median(times) * 1000), "plan_max_ms": float(np.max(times) * 1000)}


def bench_time_to_goal(goals: int, seed: int) -> dict:
    from rlstack_nav.evaluate import evaluate

    report = evaluate(goals=goals, seed=seed, progress=False)
    s = report["summary"]
    keys = ("goals", "succeeded", "success_rate", "collisions", "mean_xy_error_cm", "max_xy_error_cm",
            "mean_yaw_error_rad", "max_yaw_error_rad", "time_over_ideal_mean", "time_over_ideal_with_turns_mean",
            "path_over_shortest_grid_mean", "controller_cycle_us_mean", "sim_time_s", "wall_time_s")
    return {k: s[k] for k in keys}


def markdown(r: dict) -> str:
    c, p, h, g = r["controller"], r["planner_200"], r["home_path_ratio"], r["time_to_goal"]
    rows = [
        ("controller cycle (Navigator.step: collision check + RPP), median / p95 / max",
         f"{c['navigator_cycle']['median_us']:.0f} / {c['navigator_cycle']['p95_us']:.0f} / "
         f"{c['navigator_cycle']['max_us']:.0f} us"),
        ("pure pursuit compute alone, median / p95",
         f"{c['pure_pursuit_compute']['median_us']:.0f} / {c['pure_pursuit_compute']['p95_us']:.0f} us"),
        ("planner 200 x 200, median / max over plans",
         f"{p['median_ms']:.1f} / {p['max_ms']:.1f} ms ({p['plans']} plans)"),
        ("planner 200 x 200, corner to corner", f"{p['corner_to_corner']['time_ms']:.1f} ms, "
                                                 f"{p['corner_to_corner']['expansions']} expansions"),
        ("costmap build 200 x 200 (distance field + inflation)", f"{p['costmap_build_ms']:.1f} ms"),
        ("path / shortest grid path, 200 x 200 (mean, min..max)",
         f"{p['path_over_shortest_grid']['mean']:.3f} ({p['path_over_shortest_grid']['min']:.3f}.."
         f"{p['path_over_shortest_grid']['max']:.3f})"),
        ("path / shortest grid path, home (mean, min..max)", f"{h['mean']:.3f} ({h['min']:.3f}..{h['max']:.3f})"),
        ("home plan time, median / max", f"{h['plan_median_ms']:.1f} / {h['plan_max_ms']:.1f} ms"),
        ("time to goal / ideal at the speed limit (home, closed loop)", f"{g['time_over_ideal_mean']:.2f}"),
        ("time to goal / ideal incl. turns in place", f"{g['time_over_ideal_with_turns_mean']:.2f}"),
        ("goals reached (5 cm, 0.1 rad, no contact)", f"{g['succeeded']}/{g['goals']}, collisions {g['collisions']}"),
        ("position / heading error (mean, max)", f"{g['mean_xy_error_cm']:.1f}, {g['max_xy_error_cm']:.1f} cm / "
                                                  f"{g['mean_yaw_error_rad']:.3f}, {g['max_yaw_error_rad']:.3f} rad"),
    ]
    out = ["| measure | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    out.append(f"\n{r['machine']['cpu']}, Python {r['machine']['python']}, {'quick' if r['quick'] else 'full'} run")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(ap)
    ap.add_argument("--quick", action="store_true", help="short run (under a minute)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the closed-loop goals")
    args = ap.parse_args(argv)
    cycles, pairs, home_pairs, goals = (300, 5, 10, 3) if args.quick else (3000, 30, 50, 10)
    result = {
        "quick": args.quick,
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
                    "cores": os.cpu_count()},
        "controller": bench_controller(cycles),
        "planner_200": bench_planner(pairs),
        "home_path_ratio": bench_home_path_ratio(home_pairs),
        "time_to_goal": bench_time_to_goal(goals, args.seed),
    }
    print(markdown(result), file=sys.stderr)
    print(json.dumps(result, indent=2))
    if args.record:
        record(args.record, result, command=command_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
