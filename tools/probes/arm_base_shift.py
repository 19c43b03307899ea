#!/usr/bin/env python3
"""How far the fetch robot's base moves while only its arm moves, and how much of it wheel odometry sees.

    python tools/probes/arm_base_shift.py [--layout 0] [--base-mass KG] [--jump] [--json out.json]

The arm moves its grasp point the way the fetch mission's ``_move_ee`` does (a third of the way per
20 Hz step, at most 1.5 cm) through the mission's poses: carry -> look (the arm out of the camera's
view, 0.45 m to the left) -> carry -> a low grasp point ahead -> carry -> look -> carry, the base
commanded still. Printed per layout and leg: how far the base's true pose has moved from where it
started (mm, deg) and how far its wheels rolled (mm): what the true pose moved beyond the wheels
is what wheel odometry cannot see, and it puts a grasp target held in ``odom`` off the object.
The robot starts at the origin in every ``home`` layout, so the layout changes little.

``--base-mass`` overrides the base body's mass (the shipped robot: 40 kg); ``--jump`` sends each
step's joint targets in one jump instead of interpolating them over the control period (the
backend's former behaviour). In process, no ROS. Workstation side (PyBullet).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

#: the mission's arm poses (grasp point in base_link, m): launch/params/mission.yaml's carry_point
#: and look_arm_point, and a grasp point low ahead (a cube on a table)
CARRY = (0.40, 0.0, 0.60)
LOOK = (0.25, 0.45, 0.55)
LOW = (0.60, 0.10, 0.45)
LEGS = (("carry", CARRY), ("look", LOOK), ("carry", CARRY), ("low", LOW), ("carry", CARRY), ("look", LOOK),
        ("carry", CARRY))


def _measure(layout: int, base_mass: float, jump: bool) -> list:
    import pybullet as p

    from sim_bridges import make_backend
    from sim_bridges.in_process import grasp_point

    with make_backend("pybullet", physics_rate_hz=240, control_rate_hz=20) as sim:
        sim.load_scene("home")
        sim.reset(layout)
        robot = sim._robots[0]   # a tool: reads the body directly for the wheels' angles
        cid, body = sim._cid, robot.body
        joints = {p.getJointInfo(body, j, physicsClientId=cid)[1].decode(): j
                  for j in range(p.getNumJoints(body, physicsClientId=cid))}
        dd = robot.spec.diff_drive
        wheels = (joints[dd.left_wheel_joint], joints[dd.right_wheel_joint])
        if base_mass > 0:
            p.changeDynamics(body, -1, mass=base_mass, physicsClientId=cid)
        if jump:
            original = sim._solve_end_effector

            def solve_with_jump(delta):
                original(delta)
                ramp = sim._arm_ramp
                ramp.start, ramp.n, ramp.k = ramp.goal, 1, 0   # the whole step at the first physics step
            sim._solve_end_effector = solve_with_jump

        def base_pose() -> np.ndarray:
            pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
            m = np.array(p.getMatrixFromQuaternion(orn)).reshape(3, 3)
            return np.array([pos[0], pos[1], math.atan2(m[1, 0], m[0, 0])])

        def wheel_travel() -> np.ndarray:
            return np.array([p.getJointState(body, j, physicsClientId=cid)[0] for j in wheels]) * dd.wheel_radius

        sim.set_base_velocity(0.0, 0.0)
        sim.step(20)
        pose0, wheels0 = base_pose(), wheel_travel()
        rows = []
        for name, goal in LEGS:
            goal = np.asarray(goal)
            for _ in range(80):   # 4 s, as the mission's _move_ee
                err = goal - grasp_point(sim)
                if np.linalg.norm(err) < 0.015:
                    break
                sim.set_end_effector_delta(*np.clip(0.33 * err, -0.015, 0.015))
                sim.step(1)
            for _ in range(10):
                sim.set_end_effector_delta(0.0, 0.0, 0.0)
                sim.step(1)
            d = base_pose() - pose0
            rolled = wheel_travel() - wheels0
            rows.append({"leg": name, "moved_mm": round(float(math.hypot(d[0], d[1])) * 1e3, 2),
                         "turned_deg": round(math.degrees(math.remainder(d[2], 2 * math.pi)), 3),
                         "wheels_rolled_mm": [round(float(v) * 1e3, 2) for v in rolled]})
        return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layout", type=int, default=0, help="home layout (seed)")
    ap.add_argument("--base-mass", type=float, default=0.0, help="base body mass (kg); 0: the robot's own")
    ap.add_argument("--jump", action="store_true", help="joint targets in one jump (the backend's former behaviour)")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    out = {}
    for layout in (args.layout,):
        rows = _measure(layout, args.base_mass, args.jump)
        out[layout] = rows
        print(f"layout {layout}")
        for r in rows:
            print(f"  after {r['leg']:5s}: base moved {r['moved_mm']:6.2f} mm, turned {r['turned_deg']:+7.3f} deg; "
                  f"wheels rolled {r['wheels_rolled_mm'][0]:+6.2f} / {r['wheels_rolled_mm'][1]:+6.2f} mm")
    worst = max(r["moved_mm"] for rows in out.values() for r in rows)
    worst_turn = max(abs(r["turned_deg"]) for rows in out.values() for r in rows)
    print(f"largest shift from the start: {worst:.2f} mm, {worst_turn:.3f} deg")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
