"""The put-down jam, reproduced and fixed (docs/reference/mission.md): a cube held while the robot turns about half
a turn, then the gripper opens.

Bullet keeps a friction-anchored contact point for as long as its friction stays inside the cone, and
with it the contact normal in *world* coordinates from when the point was made. After the half turn
those normals point the wrong way; on opening, the old points act as a wall just outside the pads and
hold the fingers shut against their 20 N motors. The Panda URDF asks for friction anchors on its
fingers; the backend turns them off (``ArmSpec.finger_friction_anchors``).
"""

from __future__ import annotations

import math

import pybullet as p

from sim_bridges.contract import Pose
from sim_bridges.pybullet_backend.backend import PyBulletBackend

CUBE = "green_cube"


def _finger_width(sim) -> float:
    js = sim.joint_state()
    return float(sum(v for n, v in zip(js.names, js.position) if "finger" in n))


def _yaw_deg(sim) -> float:
    q = sim.base_odometry().pose.orientation
    return math.degrees(2.0 * math.atan2(q[2], q[3]))


def hold_turn_and_open(turn_deg: float, friction_anchors: bool, base_mass: float = 0.0) -> float:
    """Close the hand on the cube, turn the base by ``turn_deg`` (ramped, as navigation turns), stop,
    open; return the finger opening 1.5 s after the open command. ``base_mass``: the base body's
    mass (kg; 0: the robot's own)."""
    sim = PyBulletBackend()
    try:
        sim.load_scene("home")
        sim.reset(seed=1)
        arm, cid = sim._arm, sim._cid            # the engine's own bodies: this test is about Bullet
        if base_mass > 0:
            p.changeDynamics(arm.body, -1, mass=base_mass, physicsClientId=cid)
        if friction_anchors:                     # what the URDF asks for (the jam)
            for name in arm.spec.arm.finger_joints:
                p.changeDynamics(arm.body, arm.joints[name].index, frictionAnchor=1, physicsClientId=cid)
        ee = arm.links[arm.spec.arm.ee_link]
        sim.set_gripper(True)
        sim.step(60)
        pos, orn = p.getLinkState(arm.body, ee, computeForwardKinematics=1, physicsClientId=cid)[4:6]
        hand_yaw = p.getEulerFromQuaternion(orn)[2]
        sim.set_object_pose(CUBE, Pose(position=(pos[0], pos[1], pos[2] - 0.015),
                                       orientation=p.getQuaternionFromEuler([0.0, 0.0, hand_yaw])))
        sim.set_gripper(False)
        sim.step(120)
        assert 0.045 < _finger_width(sim) < 0.06          # closed on the 5 cm cube
        start = _yaw_deg(sim)
        for step in range(60 * 60):
            turned = (_yaw_deg(sim) - start + 5.0) % 360.0 - 5.0
            if turned >= turn_deg:
                break
            remaining = turn_deg - turned
            sim.set_base_velocity(0.0, min(0.5, 0.3 + 0.02 * step / 6) if remaining > 20
                                  else max(0.1, 0.5 * remaining / 20))
            sim.step(1)
        sim.set_base_velocity(0.0, 0.0)
        sim.step(60)
        assert sim.ground_truth()[CUBE].pose.position[2] > 0.3   # still in the hand
        sim.set_gripper(True)
        sim.step(90)
        return _finger_width(sim)
    finally:
        sim.close()


#: half turns of a few headings: whether a given one jams with anchors depends on the last bits of the
#: trajectory (a speed profile that differs by rounding alone jammed at 180 deg or did not), so the
#: tests look at a sweep, not at one turn
HALF_TURNS = (170.0, 175.0, 180.0, 185.0, 190.0, 195.0, 200.0, 205.0)


def test_a_cube_held_through_a_half_turn_is_let_go():
    widths = [hold_turn_and_open(turn, friction_anchors=False) for turn in HALF_TURNS]
    assert all(w > 0.075 for w in widths), dict(zip(HALF_TURNS, widths))


def test_with_the_urdfs_friction_anchors_half_turns_jam():
    """The cause, kept visible on the robot it was found on: with the anchors and the 20 kg base
    body the same sweep jams (4 of 8 when found; 1 of 8 since the backend interpolates arm steps).
    With the 40 kg base body no half turn from 150 to 230 deg jammed even with the
    anchors (a steadier base); they stay off. If none jams here any more, Bullet changed and
    docs/reference/mission.md needs a new line."""
    widths = [hold_turn_and_open(turn, friction_anchors=True, base_mass=20.0) for turn in HALF_TURNS]
    assert sum(w < 0.06 for w in widths) >= 1, dict(zip(HALF_TURNS, widths))


def test_small_turns_never_jammed():
    assert all(hold_turn_and_open(turn, friction_anchors=True) > 0.075 for turn in (0.0, 90.0))
