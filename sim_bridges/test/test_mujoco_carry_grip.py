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
pytest.importorskip("mujoco")

from sim_bridges import make_backend  # noqa: E402
from sim_bridges.contract import Pose  # noqa: E402
from sim_bridges.in_process import (  # noqa: E402
    finger_width,
    grasp_point,
    in_base,
    object_in_hand,
    place_robot,
    ramp,
    set_finger_solref,
)

CUBE = "yellow_cube"
CARRY = np.array([0.40, 0.0, 0.60])       # the mission's carry point in base_link
#: the robot in front of home's table_3 (x 0.4-1.2, y 2.1-2.7, 0.5 m high), facing it
BASE_XY, BASE_YAW = (0.8, 1.62), math.pi / 2
PER_COMMAND = 3                           # the fetch graph: bridge at 60 Hz, commands at 20 Hz


def _move(sim, goal: np.ndarray, cap: float, seconds: float, gain: float = 0.5, base=None) -> None:
    """The mission's arm moves: a fraction of the error per 20 Hz command, at most ``cap``."""
    for _ in range(int(seconds * 20)):
        err = goal - grasp_point(sim)
        twist = base() if base is not None else None
        if np.linalg.norm(err) < 0.015 and twist is None:
            break
        if np.linalg.norm(err) >= 0.015:
            sim.set_end_effector_delta(*np.clip(gain * err, -cap, cap))
        sim.set_base_velocity(*(twist or (0.0, 0.0)))
        sim.step(PER_COMMAND)
    sim.set_base_velocity(0.0, 0.0)


def _drive(sim, plan) -> None:
    """Base commands at 20 Hz through ``plan`` [(v, w, seconds)], ramped as the nav controller does."""
    for v, w in ramp(plan):
        sim.set_base_velocity(v, w)
        sim.step(PER_COMMAND)


def _lift_and_stow(finger_solref=None):
    """Lift the cube off the table and stow it to the carry point while backing off 0.3 m."""
    sim = make_backend("mujoco")
    sim.load_scene("home")
    sim.reset(seed=1)
    if finger_solref is not None:   # MuJoCo's own default contact on the finger pads
        set_finger_solref(sim, finger_solref)
    sim.set_control_rate(60.0)
    sim.set_end_effector_step_period(0.05)
    place_robot(sim, BASE_XY, BASE_YAW)
    ahead = (BASE_XY[0], BASE_XY[1] + 0.58)
    sim.set_object_pose(CUBE, Pose(position=(ahead[0], ahead[1], 0.525),
                                   orientation=(0.0, 0.0, math.sin(BASE_YAW / 2), math.cos(BASE_YAW / 2))))
    sim.set_gripper(True)
    sim.step(60)
    cube = in_base(sim, sim.ground_truth()[CUBE].pose.position)
    _move(sim, cube + np.array([0.0, 0.0, 0.10]), 0.03, 4.0)
    _move(sim, cube, 0.015, 3.0)
    sim.set_gripper(False)
    sim.step(60)
    assert 0.045 < finger_width(sim) < 0.055, finger_width(sim)            # closed on the 5 cm cube
    _move(sim, grasp_point(sim) + np.array([0.0, 0.0, 0.08]), 0.015, 2.0)
    assert sim.ground_truth()[CUBE].pose.position[2] > 0.56    # lifted
    held = object_in_hand(sim, CUBE)
    start = sim.base_odometry().pose.position.copy()

    def back_off():
        rem = 0.3 - float(np.linalg.norm(sim.base_odometry().pose.position[:2] - start[:2]))
        return None if rem < 0.01 else (-min(0.2, 1.5 * rem + 0.02), 0.0)

    _move(sim, CARRY, 0.02, 6.0, gain=0.33, base=back_off)
    return sim, held


def test_a_held_cube_survives_the_stow_and_the_drive():
    sim, held = _lift_and_stow()
    try:
        slid_stow = object_in_hand(sim, CUBE) - held
        # two half turns in place (to the path, at the goal) and a drive with a bend between them
        _drive(sim, [(0.0, 1.5, 2.1), (0.0, 0.0, 0.8), (0.65, 0.0, 2.5), (0.65, 1.0, 1.0), (0.0, 0.0, 1.5),
                     (0.0, -1.5, 2.1), (0.0, 0.0, 0.8)])
        slid = object_in_hand(sim, CUBE) - held
        assert finger_width(sim) > 0.045, finger_width(sim)                    # still closed on the cube
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
        before = object_in_hand(sim, CUBE)
        _drive(sim, [(0.0, 1.5, 2.0)])
        slid = object_in_hand(sim, CUBE)[0] - before[0]
        assert slid > 0.008, slid
    finally:
        sim.close()
