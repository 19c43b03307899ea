"""Reproduce the drop jam of the fetch evaluation in process (no ROS): ``python tools/probes/repro_drop_jam.py``.

About 1 fetch drop in 10 ends RELEASE_FAILED: the fingers open fully (8 cm) and the 5 cm cube still
moves up with the hand (docs/reference/mission.md, Results). This script shows the mechanism, not its cause:
it lifts the cube with the shipped ``policies/mobile_lift`` in the ``mobile_table`` scene, carries it
to the carry point, backs the base off the table, then turns the cube in the hand so that one of
its long diagonals lies between the fingers (``--tilt`` 1.0: the body diagonal; smaller values tilt
it less), opens the gripper and tries the mission's recoveries. A jammed cube stays at the grasp
point with the fingers fully open, as in the evaluation's failed drops. Measured: tilt 0.6, 0.8
and 1.0 (extents of about 8 cm and more between the fingers) jam; tilt 0 and 0.3 (a face diagonal,
7.1 cm, and a little more) fall.

What is still unknown: what turns the cube in the grasp during a real carry (the same carry and
release in process, with hard stops and turns, never jammed in 60 tries).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pybullet as p

from rlstack_bundle import bundle
from rlstack_learning.envs.mobile_lift import MobileLiftEnv
from sim_bridges.scenes.mobile_table import TARGET

ROOT = Path(__file__).resolve().parents[2]
CARRY_POINT = np.array([0.40, 0.0, 0.60])   # the mission's carry_point (base_link)


def quat_between(a, b) -> np.ndarray:
    """Shortest rotation (xyzw) taking direction ``a`` onto direction ``b``."""
    a, b = (np.asarray(v, float) / np.linalg.norm(v) for v in (a, b))
    q = np.array([*np.cross(a, b), 1.0 + a @ b])
    return q / np.linalg.norm(q)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tilt", type=float, nargs="+", default=[1.0, 0.8, 0.6],
                    help="diagonal between the fingers: (1, tilt, 1) in the cube's frame")
    args = ap.parse_args()
    policy = bundle.load(str(ROOT / "policies" / "mobile_lift"))
    env = MobileLiftEnv()
    sim = env.sim
    cid = sim.client_id

    def move_ee(goal, steps, grip_open):
        for _ in range(steps):
            err = goal - env.ee_position()
            if np.linalg.norm(err) < 0.015:
                return
            sim.set_end_effector_delta(*np.clip(err, -0.015, 0.015))
            sim.set_gripper(grip_open)
            sim.step(1)

    def cube_z() -> float:
        return float(sim.ground_truth()[TARGET].pose.position[2])

    def finger_width() -> float:
        js = sim.joint_state()
        return float(sum(v for n, v in zip(js.names, js.position) if "finger" in n))

    arm = sim._arm                      # the backend's arm body (diagnostic script: private access is fine)
    cube = sim._objects[TARGET].body
    jammed = 0
    for tilt in args.tilt:
        obs, _ = env.reset(seed=args.seed)
        for _ in range(160):
            obs, _, term, trunc, info = env.step(policy.act(obs))
            if term or trunc:
                break
        if not info.get("is_success"):
            print(f"tilt {tilt}: the lift failed, skipped")
            continue
        move_ee(CARRY_POINT, 120, False)
        for _ in range(40):             # back off the table
            sim.set_base_velocity(-0.5, 0.0)
            sim.step(1)
        sim.set_base_velocity(0.0, 0.0)
        sim.set_gripper(True)
        for _ in range(10):
            sim.step(1)
        left, right = (np.array(p.getLinkState(arm.body, arm.links[n], physicsClientId=cid)[4])
                       for n in ("panda_leftfinger", "panda_rightfinger"))
        grasp_point = p.getLinkState(arm.body, arm.links["panda_grasptarget"], computeForwardKinematics=1,
                                     physicsClientId=cid)[4]
        q = quat_between([1.0, tilt, 1.0], left - right)
        p.resetBasePositionAndOrientation(cube, grasp_point, q.tolist(), physicsClientId=cid)
        p.resetBaseVelocity(cube, [0, 0, 0], [0, 0, 0], physicsClientId=cid)
        for _ in range(20):
            sim.step(1)
        z_open = cube_z()
        # the mission's recovery: close, reopen, lift the hand 5 cm
        sim.set_gripper(False)
        for _ in range(10):
            sim.step(1)
        move_ee(env.ee_position() + [0.0, 0.0, 0.05], 20, True)
        stuck = cube_z() > 0.3
        jammed += stuck
        print(f"tilt {tilt}: cube z {z_open:.3f} m with the gripper open; after close, reopen and lift "
              f"{cube_z():.3f} m, fingers {finger_width() * 100:.1f} cm -> {'JAMMED' if stuck else 'fell'}")
    print(f"{jammed} of {len(args.tilt)} jammed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
