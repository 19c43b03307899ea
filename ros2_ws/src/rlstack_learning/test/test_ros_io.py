"""Observation/action terms <-> message fields (rlstack_learning.ros.io), with stand-in messages (no ROS)."""

from types import SimpleNamespace as NS

import numpy as np
import pytest

from rlstack_learning.envs.ball_plate import BallPlateEnv
from rlstack_learning.envs.cartpole import CartPoleEnv
from rlstack_learning.envs.lift import PandaLiftEnv
from rlstack_learning.ros.io import ActWriter, ObsReader, Unsupported


def _js(names, pos, vel):
    return NS(name=names, position=pos, velocity=vel, effort=[0.0] * len(names))


def test_cartpole_terms_read_joint_states_by_name():
    r = ObsReader(CartPoleEnv.obs_terms, 60.0)
    msg = _js(["cart_to_pole", "slider_to_cart"], [0.1, 0.5], [-1.0, 2.0])
    assert r.read({"/joint_states": msg}).tolist() == [0.5, 2.0, 0.1, -1.0]
    w = ActWriter(CartPoleEnv.act_terms)
    msgs = w.messages(np.array([3.5]), {"/cartpole/force": lambda: NS(data=0.0)})
    assert msgs["/cartpole/force"].data == 3.5


def test_ball_plate_finite_difference_and_names_from_markers():
    r = ObsReader(BallPlateEnv.obs_terms, 30.0)
    pose = lambda x, y: NS(poses=[NS(position=NS(x=9.0, y=9.0, z=0.0)), NS(position=NS(x=x, y=y, z=0.1))])  # noqa: E731
    names = {"/sim_ground_truth/poses": ["a_other", "ball"]}
    js = _js(["plate_pitch", "plate_roll"], [0.01, -0.02], [0.0, 0.0])
    from sim_bridges.robots.ball_plate import PITCH_JOINT, ROLL_JOINT
    js.name = [PITCH_JOINT, ROLL_JOINT]
    first = r.read({"/sim_ground_truth/poses": pose(0.01, 0.02), "/joint_states": js}, names)
    assert first[:4].tolist() == [0.01, 0.02, 0.0, 0.0]  # velocity 0 on the first sample
    second = r.read({"/sim_ground_truth/poses": pose(0.02, 0.0), "/joint_states": js}, names)
    assert second[2] == pytest.approx(0.3) and second[3] == pytest.approx(-0.6)
    r.reset()
    assert r.read({"/sim_ground_truth/poses": pose(0.5, 0.5), "/joint_states": js}, names)[2] == 0.0


def test_lift_terms_are_reported_unsupported():
    with pytest.raises(Unsupported, match="ee_x"):
        ObsReader(PandaLiftEnv.obs_terms, 20.0)
    w = ActWriter(PandaLiftEnv.act_terms)
    classes = {"/arm/ee_delta": lambda: NS(x=0.0, y=0.0, z=0.0), "/arm/gripper": lambda: NS(data=False)}
    msgs = w.messages(np.array([0.01, -0.01, 0.0, 0.5]), classes)
    assert (msgs["/arm/ee_delta"].x, msgs["/arm/ee_delta"].y, msgs["/arm/gripper"].data) == (0.01, -0.01, True)
