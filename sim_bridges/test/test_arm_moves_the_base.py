"""The arm's moves must not walk the mobile base (docs/reference/mission.md, "Drift and the localiser").

With each end-effector step's joint targets set in one jump and a 20 kg base body, moving the
grasp point between the fetch mission's poses walked the base 94 mm and turned it 4 deg while its
wheels rolled under 1 mm: wheel odometry could not see it, and the grasp target held in ``odom`` was
off by centimetres. The backend now interpolates each step's targets over the control period, and
the base body weighs 40 kg. ``tools/probes/arm_base_shift.py`` prints the full table.
"""

from __future__ import annotations

import math

import numpy as np
import pybullet as p

from sim_bridges.in_process import grasp_point
from sim_bridges.pybullet_backend.backend import PyBulletBackend

#: the mission's carry and look poses and a low grasp point ahead (grasp point in base_link, m)
CARRY, LOOK, LOW = (0.40, 0.0, 0.60), (0.25, 0.45, 0.55), (0.60, 0.10, 0.45)


def _base_pose(sim) -> np.ndarray:
    o = sim.base_odometry()
    m = np.array(p.getMatrixFromQuaternion(o.pose.orientation)).reshape(3, 3)
    return np.array([o.pose.position[0], o.pose.position[1], math.atan2(m[1, 0], m[0, 0])])


def _move(sim, goal) -> float:
    """Step the grasp point towards ``goal`` as the mission's _move_ee does; return the distance left."""
    goal = np.asarray(goal)
    for _ in range(80):
        err = goal - grasp_point(sim)
        if np.linalg.norm(err) < 0.015:
            break
        sim.set_end_effector_delta(*np.clip(0.33 * err, -0.015, 0.015))
        sim.step(1)
    for _ in range(10):
        sim.set_end_effector_delta(0.0, 0.0, 0.0)
        sim.step(1)
    return float(np.linalg.norm(goal - grasp_point(sim)))


def test_the_missions_arm_moves_leave_the_base_where_it_stood():
    sim = PyBulletBackend(control_rate_hz=20.0)
    try:
        sim.load_scene("home")
        sim.reset(seed=0)
        sim.set_base_velocity(0.0, 0.0)
        sim.step(20)
        start = _base_pose(sim)
        for goal in (CARRY, LOOK, CARRY, LOW, CARRY, LOOK, CARRY):
            assert _move(sim, goal) < 0.03, f"the arm did not reach {goal}"
        moved = _base_pose(sim) - start
        assert math.hypot(moved[0], moved[1]) < 0.005, moved          # 94 mm before the fix, 1.8 mm now
        assert abs(math.degrees(math.remainder(moved[2], 2 * math.pi))) < 0.3, moved   # 4.1 deg before
    finally:
        sim.close()


def test_an_end_effector_step_is_spread_over_the_control_period():
    sim = PyBulletBackend(control_rate_hz=20.0)
    try:
        sim.load_scene("home")
        sim.reset(seed=0)
        sim.step(10)
        sim.set_end_effector_delta(0.0, 0.0, -0.015)
        ramp = sim._arm_ramp
        assert ramp is not None and ramp.k == 0 and ramp.n == sim.physics_steps_per_control
        sim.step(1)
        assert ramp.k == ramp.n and np.allclose(ramp.current, ramp.goal)   # all of it within one period
        before = grasp_point(sim)[2]
        sim.set_end_effector_delta(0.0, 0.0, -0.015)
        sim.step(3)
        assert grasp_point(sim)[2] < before - 0.01   # and the hand follows
        sim.reset(seed=0)
        assert sim._arm_ramp is None                          # a reset forgets a step in progress
    finally:
        sim.close()
