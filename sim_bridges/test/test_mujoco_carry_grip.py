"""A cube lifted from a table stays in the Panda's hand on MuJoCo through the mission's stow and the
drive to the drop-off (``tools/probes/carry_grip.py`` is the longer sweep).

MuJoCo's friction is a soft constraint whose reference acceleration is ``-b * slip speed``, and its
constraint accelerations leave out the velocity-product terms, so while the robot turns a held cube
slides in the hand at about (centripetal acceleration) / ``b``. With MuJoCo's default contact
(``solref`` 0.02 s) that was 7 mm/s at the carry pose in a 1.5 rad/s turn in place, and the fetch
graph lost 3 of 23 cubes while turning; the backend gives the finger pads a stiffer contact
(``_FINGER_CONTACT_BH`` in the backend).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

# the backend first: it picks MuJoCo's headless GL before mujoco is imported (the camera tests
# collected with this file need it)
pytest.importorskip("sim_bridges.mujoco_backend")
mujoco = pytest.importorskip("mujoco")

from sim_bridges import make_backend  # noqa: E402
from sim_bridges.contract import Pose  # noqa: E402
from sim_bridges.geometry import quat_to_matrix  # noqa: E402

CUBE = "yellow_cube"
CARRY = np.array([0.40, 0.0, 0.60])       # the mission's carry point in base_link
#: the robot in front of home's table_3 (x 0.4-1.2, y 2.1-2.7, 0.5 m high), facing it
BASE_XY, BASE_YAW = (0.8, 1.62), math.pi / 2
PER_COMMAND = 3                           # the fetch graph: bridge at 60 Hz, commands at 20 Hz


def _place_robot(sim) -> None:
    """Move the base from the origin (heading 0) to BASE_XY, BASE_YAW: MuJoCo state, the test is
    about the grasp, not the drive there."""
    model, d = sim.model, sim.data
    base = sim._mobile[3]
    c, s = math.cos(BASE_YAW), math.sin(BASE_YAW)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    j = next(j for j in range(model.njnt)
             if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE and model.jnt_bodyid[j] == base)
    a, v = model.jnt_qposadr[j], model.jnt_dofadr[j]
    d.qpos[a:a + 3] = rot @ d.qpos[a:a + 3] + np.array([BASE_XY[0], BASE_XY[1], 0.0])
    q = np.zeros(4)
    mujoco.mju_mulQuat(q, np.array([math.cos(BASE_YAW / 2), 0.0, 0.0, math.sin(BASE_YAW / 2)]),
                       d.qpos[a + 3:a + 7].copy())
    d.qpos[a + 3:a + 7] = q
    d.qvel[v:v + 6] = 0.0
    mujoco.mj_forward(model, d)
    sim._dirty = True


def _grasp_point(sim) -> np.ndarray:
    base = sim.body_pose("base_link")
    return quat_to_matrix(base.orientation).T @ (sim.body_pose("panda_grasptarget").position - base.position)


def _cube_in_hand(sim) -> np.ndarray:
    """The cube's centre in the grasp frame: x along the pads, y between the fingers, z along them."""
    g = sim.body_pose("panda_grasptarget")
    return quat_to_matrix(g.orientation).T @ (sim.ground_truth()[CUBE].pose.position - g.position)


def _width(sim) -> float:
    js = sim.joint_state()
    return float(sum(v for n, v in zip(js.names, js.position) if "finger" in n))


def _move(sim, goal: np.ndarray, cap: float, seconds: float, gain: float = 0.5, base=None) -> None:
    """The mission's arm moves: a fraction of the error per 20 Hz command, at most ``cap``."""
    for _ in range(int(seconds * 20)):
        err = goal - _grasp_point(sim)
        twist = base() if base is not None else None
        if np.linalg.norm(err) < 0.015 and twist is None:
            break
        if np.linalg.norm(err) >= 0.015:
            sim.set_end_effector_delta(*np.clip(gain * err, -cap, cap))
        sim.set_base_velocity(*(twist or (0.0, 0.0)))
        sim.step(PER_COMMAND)
    sim.set_base_velocity(0.0, 0.0)


def _drive(sim, plan) -> None:
    """Base commands at 20 Hz, ramped as the nav controller limits them (0.5 m/s^2 up, 0.8 down,
    2.5 rad/s^2)."""
    v = w = 0.0
    for v_goal, w_goal, seconds in plan:
        for _ in range(int(round(seconds * 20))):
            dv = (0.5 if abs(v_goal) > abs(v) else 0.8) * 0.05
            v += max(-dv, min(dv, v_goal - v))
            w += max(-0.125, min(0.125, w_goal - w))
            sim.set_base_velocity(v, w)
            sim.step(PER_COMMAND)


def _lift_and_stow(finger_solref=None):
    """Lift the cube off the table and stow it to the carry point while backing off 0.3 m."""
    sim = make_backend("mujoco")
    sim.load_scene("home")
    sim.reset(seed=1)
    if finger_solref is not None:   # MuJoCo's own default contact on the finger pads
        _, _, links = sim._arm
        bodies = {links[n] for n in links if "finger" in n}
        for g in range(sim.model.ngeom):
            if sim.model.geom_bodyid[g] in bodies and sim.model.geom_contype[g]:
                sim.model.geom_solref[g] = finger_solref
    sim.set_control_rate(60.0)
    sim.set_end_effector_step_period(0.05)
    _place_robot(sim)
    ahead = (BASE_XY[0], BASE_XY[1] + 0.58)
    sim.set_object_pose(CUBE, Pose(position=(ahead[0], ahead[1], 0.525),
                                   orientation=(0.0, 0.0, math.sin(BASE_YAW / 2), math.cos(BASE_YAW / 2))))
    sim.set_gripper(True)
    sim.step(60)
    base = sim.body_pose("base_link")
    cube = quat_to_matrix(base.orientation).T @ (sim.ground_truth()[CUBE].pose.position - base.position)
    _move(sim, cube + np.array([0.0, 0.0, 0.10]), 0.03, 4.0)
    _move(sim, cube, 0.015, 3.0)
    sim.set_gripper(False)
    sim.step(60)
    assert 0.045 < _width(sim) < 0.055, _width(sim)            # closed on the 5 cm cube
    _move(sim, _grasp_point(sim) + np.array([0.0, 0.0, 0.08]), 0.015, 2.0)
    assert sim.ground_truth()[CUBE].pose.position[2] > 0.56    # lifted
    held = _cube_in_hand(sim)
    start = sim.base_odometry().pose.position.copy()

    def back_off():
        rem = 0.3 - float(np.linalg.norm(sim.base_odometry().pose.position[:2] - start[:2]))
        return None if rem < 0.01 else (-min(0.2, 1.5 * rem + 0.02), 0.0)

    _move(sim, CARRY, 0.02, 6.0, gain=0.33, base=back_off)
    return sim, held


def test_a_held_cube_survives_the_stow_and_the_drive():
    sim, held = _lift_and_stow()
    try:
        slid_stow = _cube_in_hand(sim) - held
        # two half turns in place (to the path, at the goal) and a drive with a bend between them
        _drive(sim, [(0.0, 1.5, 2.1), (0.0, 0.0, 0.8), (0.65, 0.0, 2.5), (0.65, 1.0, 1.0), (0.0, 0.0, 1.5),
                     (0.0, -1.5, 2.1), (0.0, 0.0, 0.8)])
        slid = _cube_in_hand(sim) - held
        assert _width(sim) > 0.045, _width(sim)                    # still closed on the cube
        # measured: 3.3 mm along the pads in the stow, 8.2 mm by the end (MuJoCo's default contact:
        # 9.6 mm in the stow, then out of the hand in the second half turn); PyBullet: 0.3 / 8 mm
        assert abs(slid_stow[0]) < 0.008, slid_stow
        assert np.abs(slid).max() < 0.015, slid
    finally:
        sim.close()


def test_with_mujocos_default_contact_a_turn_slides_the_cube_out():
    """The cause, kept visible: with MuJoCo's default ``solref`` on the finger pads, turning in place
    at 1.5 rad/s slides the cube outwards along the pads at ~7 mm/s: 12 mm in this turn (with the
    backend's finger contact 1.9 mm). If this stops
    sliding, MuJoCo changed and the backend's finger contact comment needs a new line."""
    sim, held = _lift_and_stow(finger_solref=[0.02, 1.0])
    try:
        before = _cube_in_hand(sim)
        _drive(sim, [(0.0, 1.5, 2.0)])
        slid = _cube_in_hand(sim)[0] - before[0]
        assert slid > 0.008, slid
    finally:
        sim.close()
