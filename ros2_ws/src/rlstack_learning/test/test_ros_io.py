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


def _tf_message(transforms):
    """A TFMessage stand-in from the contract's link transforms, as the bridge publishes /tf."""
    return NS(transforms=[NS(header=NS(frame_id=t.parent), child_frame_id=t.child, transform=NS(
        translation=NS(x=t.pose.position[0], y=t.pose.position[1], z=t.pose.position[2]),
        rotation=NS(x=t.pose.orientation[0], y=t.pose.orientation[1], z=t.pose.orientation[2],
                    w=t.pose.orientation[3]))) for t in transforms])


def test_lift_terms_over_ros_equal_the_in_process_observation():
    """The lift's grasp point from the /tf chain (world -> ... -> panda_grasptarget), the cube's yaw
    terms, its height to go and the distance term: the same raw vector the in-process env reads,
    from the messages the bridge would publish of the same simulator state."""
    env = PandaLiftEnv()
    try:
        env.reset(seed=7)
        reader = ObsReader(PandaLiftEnv.obs_terms, 20.0)
        rng = np.random.default_rng(0)
        for step in range(25):
            env.step(rng.uniform(-1, 1, 4).astype(np.float32))
            sim = env.unwrapped.sim
            js = sim.joint_state()
            gt = sim.ground_truth()
            names = sorted(gt)
            poses = NS(poses=[NS(position=NS(x=gt[n].pose.position[0], y=gt[n].pose.position[1],
                                             z=gt[n].pose.position[2]),
                                 orientation=NS(x=gt[n].pose.orientation[0], y=gt[n].pose.orientation[1],
                                                z=gt[n].pose.orientation[2], w=gt[n].pose.orientation[3]))
                            for n in names])
            msgs = {"/tf": _tf_message(sim.link_transforms()), "/joint_states": _js(list(js.names), js.position,
                                                                                   js.velocity),
                    "/sim_ground_truth/poses": poses}
            got = reader.read(msgs, {"/sim_ground_truth/poses": names})
            # 1 um: the chain composed from the link transforms vs PyBullet's own world link state (0.2 um seen)
            np.testing.assert_allclose(got, env.unwrapped._raw_obs(), atol=1e-6, err_msg=f"step {step}")
    finally:
        env.close()


def test_mobile_lift_target_terms_are_reported_unsupported():
    from rlstack_learning.envs.mobile_lift import MobileLiftEnv

    with pytest.raises(Unsupported, match="target_x"):
        ObsReader(MobileLiftEnv.obs_terms, 20.0)
    w = ActWriter(PandaLiftEnv.act_terms)
    classes = {"/arm/ee_delta": lambda: NS(x=0.0, y=0.0, z=0.0), "/arm/gripper": lambda: NS(data=False)}
    msgs = w.messages(np.array([0.01, -0.01, 0.0, 0.5]), classes)
    assert (msgs["/arm/ee_delta"].x, msgs["/arm/ee_delta"].y, msgs["/arm/gripper"].data) == (0.01, -0.01, True)
