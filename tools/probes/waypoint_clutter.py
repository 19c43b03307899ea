#!/usr/bin/env python3
"""How often an object lying on the floor blocks each of the home's exploration waypoints, over
development layouts, without a simulator: ``python tools/probes/waypoint_clutter.py [--seeds 400]``.

Why: a waypoint with a floor object within the robot's radius is not driven to; the look around
happens from a pose beside it (``waypoint_alternate_distance`` away), often too far from the table
it was placed for. Moving the table_1 waypoint towards the table put it beside a floor region of the
``home`` scene, and in a reporting run 6 of 40 fetches found it blocked (none before).

For each waypoint of ``launch/params/mission.yaml`` (or each ``--point=X,Y``) it prints the share of
development seeds (0 .. --seeds-1; the fetch reports on 1000-1039) whose seeded placement puts a floor
object's centre within ``--radius`` of it, and for each table the distance from the waypoint to the
farthest spot an object can lie on its top. ``--search`` lists, per table, free points (static map,
``--radius`` clearance) within 1.5 m of every spot on its top, least cluttered first.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ros2_ws" / "src" / "rlstack_mission"))

from rlstack_mission.approaches import clearance  # noqa: E402
from rlstack_mission.layouts import TABLES, TABLE_MARGIN  # noqa: E402
from rlstack_nav.map_io import load_map  # noqa: E402
from sim_bridges.scenes import make_scene  # noqa: E402


def floor_objects(seeds: int) -> list:
    """Each seed's floor object centres (x, y), as ``home``'s reset places them."""
    spec = make_scene("home")
    out = []
    for seed in range(seeds):
        poses = spec.sample_object_poses(np.random.default_rng(seed))
        out.append(np.array([[p.position[0], p.position[1]] for p in poses.values() if p.position[2] < 0.3]))
    return out


def cluttered(point, floors, radius: float) -> float:
    return float(np.mean([len(f) > 0 and np.min(np.hypot(f[:, 0] - point[0], f[:, 1] - point[1])) < radius
                          for f in floors]))


def farthest_spot(point, table: str) -> float:
    cx, cy, sx, sy = TABLES[table]
    xs = (cx - sx / 2 + TABLE_MARGIN, cx + sx / 2 - TABLE_MARGIN)
    ys = (cy - sy / 2 + TABLE_MARGIN, cy + sy / 2 - TABLE_MARGIN)
    return max(math.dist(point, (x, y)) for x in xs for y in ys)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=400, help="development seeds 0 .. N-1")
    p.add_argument("--radius", type=float, default=0.6, help="robot radius plus a margin, m")
    p.add_argument("--point", action="append", default=[], metavar="X,Y",
                   help="a point instead of mission.yaml's waypoints (repeatable; --point=-0.6,-1.6 for a minus)")
    p.add_argument("--search", action="store_true", help="list the least cluttered free points near each table")
    a = p.parse_args(argv)
    if a.point:
        points = [tuple(float(v) for v in s.split(",")) for s in a.point]
    else:
        flat = yaml.safe_load((ROOT / "launch" / "params" / "mission.yaml").read_text())["/**"]["ros__parameters"][
            "explore_waypoints"]
        points = [tuple(flat[i:i + 2]) for i in range(0, len(flat), 3)]
    floors = floor_objects(a.seeds)
    print(f"{'waypoint':>16}  cluttered  " + "  ".join(f"{t} far" for t in TABLES))
    for pt in points:
        print(f"({pt[0]:5.2f}, {pt[1]:5.2f})  {100 * cluttered(pt, floors, a.radius):8.1f} %  " +
              "  ".join(f"{farthest_spot(pt, t):9.2f}" for t in TABLES))
    if a.search:
        g = load_map(ROOT / "maps" / "home.yaml")
        mask, res, origin = g.occupied_mask(), g.resolution, g.origin[:2]
        for table in TABLES:
            found = []
            for x in np.arange(-3.5, 3.55, 0.05):
                for y in np.arange(-2.8, 2.85, 0.05):
                    pt = (round(float(x), 2), round(float(y), 2))
                    if farthest_spot(pt, table) <= 1.5 and clearance(mask, res, origin, *pt, a.radius - 0.05):
                        found.append((cluttered(pt, floors, a.radius), farthest_spot(pt, table), pt))
            found.sort()
            print(table, ", ".join(f"{pt} {100 * c:.1f} % far {f:.2f}" for c, f, pt in found[:5]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
