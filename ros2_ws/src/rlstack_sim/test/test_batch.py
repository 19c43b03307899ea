"""Commands carried in a step request (rlstack_sim.core) and the batched lockstep core
(rlstack_sim.batch) on the real PyBullet backend, no ROS."""

import numpy as np
import pytest
from test_core import bridge

from rlstack_sim.batch import BatchSims
from rlstack_sim.config import ConfigError
from rlstack_sim.core import REQUEST_COMMANDS, apply_request_commands, plan_request_commands


def batch(scene="cartpole", n=3, seed=5):
    return BatchSims("pybullet", scene, n, seed, 240.0, 60.0, 0.5, 0.05, (1.0, 2.0, 1.0, 3.0),
                     lambda m: None, lambda m: None)


def test_request_commands_are_planned_against_the_scene():
    assert plan_request_commands(["/cartpole/force"], 1, ["cart_force"]) == ("", [("cart_force", 1)])
    assert plan_request_commands(["ball_plate/angles"], 6, ["plate_angles"], copies=2) == ("", [("plate_angles", 3)])
    why, plan = plan_request_commands(["cartpole/force"], 2, ["cart_force"])
    assert plan == [] and "command_values has 2 values, expected 1" in why
    why, _ = plan_request_commands(["arm/joint_targets"], 1, ["joint_targets"])
    assert "cannot be carried in a step request" in why
    why, _ = plan_request_commands(["ball_plate/angles"], 3, ["cart_force"])
    assert "not one this scene takes" in why
    assert set(REQUEST_COMMANDS) >= {"cmd_vel", "arm/gripper", "cartpole/force", "ball_plate/angles"}


def test_a_request_command_goes_through_the_same_checks_as_a_topic_message():
    sim, cmd, stepper, log, channels, _ = bridge("cartpole")
    try:
        _, plan = plan_request_commands(["cartpole/force"], 1, channels)
        apply_request_commands(cmd, plan, [5.0])
        assert cmd.commands_received == 1
        apply_request_commands(cmd, plan, [float("nan")])   # rejected and counted, as on the topic
        assert cmd.commands_received == 1 and cmd.rejects.total == 1
    finally:
        sim.close()


def test_batched_envs_equal_single_bridges_with_the_same_seeds():
    """Env i of a batch = a lockstep bridge's sim reset with the same seed, given the same commands (exact)."""
    b = batch(n=3)
    singles = [bridge("cartpole") for _ in range(3)]
    try:
        seeds = [11, 12, 13]
        assert b.step(0, [], [], seeds) == ""
        for (sim, cmd, stepper, *_), s in zip(singles, seeds):
            sim.reset(s)
            cmd.reset()
            stepper.reset()
        rng = np.random.default_rng(0)
        for _ in range(40):
            forces = rng.uniform(-10, 10, 3)
            assert b.step(1, ["cartpole/force"], forces, []) == ""
            state = b.state()
            for i, (sim, cmd, stepper, *_) in enumerate(singles):
                cmd.cart_force(float(forces[i]))
                stepper.run(1, lambda: None)
                js = sim.joint_state()
                assert np.array_equal(state.joint_position[i], js.position)
                assert np.array_equal(state.joint_velocity[i], js.velocity)
                assert state.sim_time[i] == sim.sim_time
        assert state.commands_received == [40, 40, 40]
        # a reset of one env leaves the others where they are
        before = b.state()
        assert b.step(0, [], [], [-1, 11, -1]) == ""
        after = b.state()
        assert after.sim_time[1] == 0.0 and after.commands_received == [40, 0, 40]
        assert np.array_equal(after.joint_position[[0, 2]], before.joint_position[[0, 2]])
    finally:
        b.close()
        for sim, *_ in singles:
            sim.close()


def test_bad_batch_calls_are_refused_whole():
    b = batch(n=2)
    try:
        t0 = b.state().sim_time.copy()
        assert "expected 0 or 2" in b.step(1, [], [], [1])
        assert "expected 2" in b.step(1, ["cartpole/force"], [1.0], [])
        assert np.array_equal(b.state().sim_time, t0)
        with pytest.raises(ConfigError, match="num_envs"):
            batch(n=0)
    finally:
        b.close()


def test_ball_plate_batch_reports_object_positions():
    b = batch("ball_plate", n=2)
    try:
        assert b.step(2, ["ball_plate/angles"], [0.1, 0.0, 0.0, -0.1, 0.0, 0.0], []) == ""
        s = b.state()
        assert "ball" in s.object_names and s.object_position.shape == (2, len(s.object_names), 3)
        assert s.object_orientation.shape == (2, len(s.object_names), 4)
        assert s.joint_position.shape == (2, len(s.joint_names))
    finally:
        b.close()


def test_auto_reset_resets_an_env_whose_episode_ended_and_reports_both_states():
    """An env crossing an end limit (or told its episode ends) is reset in the same call with its
    auto-reset seed: the call reports its terminal state (commands counted before the reset) and
    the new episode's first state, which equals a plain reset with that seed. Others go on."""
    from sim_bridges.robots.cartpole import CART_JOINT, POLE_JOINT

    b, ref = batch(n=3), batch(n=1)
    try:
        assert b.step(0, [], [], [1, 2, 3]) == ""
        pole = b.joint_names.index(POLE_JOINT)
        limits = [2.4, 0.2]
        for k in range(200):  # push env 0 hard until its pole falls past 0.2 rad
            before = b.state()
            err = b.step(1, ["cartpole/force"], [10.0, 0.0, 0.0], [], auto_reset_seeds=[77, 78, -1],
                         end_joints=[CART_JOINT, POLE_JOINT], end_abs_limits=limits)
            assert err == ""
            s = b.state()
            if s.auto_reset.any():
                break
        else:
            pytest.fail("env 0's pole never passed the limit")
        assert s.auto_reset.tolist() == [True, False, False]
        assert abs(s.joint_position[0, pole]) > 0.2 and s.commands_received[0] == k + 1
        assert s.sim_time[0] == pytest.approx(before.sim_time[0] + 1 / 60.0)
        assert ref.step(0, [], [], [77]) == ""
        fresh = ref.state()
        assert s.reset.joint_position.shape == (1, len(b.joint_names))
        assert np.array_equal(s.reset.joint_position[0], fresh.joint_position[0])
        assert np.array_equal(s.reset.joint_velocity[0], fresh.joint_velocity[0])
        terminal = s.joint_position.copy()
        # a refused call applies nothing; env 0 still reports its new episode, and the state taken
        # before (the call's terminal rows) is the caller's own copy, unchanged by later calls
        assert "reset_seeds has 1 entries" in b.step(1, [], [], [1])
        refused = b.state()
        assert np.array_equal(refused.joint_position[0], fresh.joint_position[0]) and refused.auto_reset.size == 0
        assert np.array_equal(s.joint_position, terminal)
        assert b.step(0, [], [], []) == ""   # report only: env 0 now holds the new episode
        after = b.state()
        assert after.sim_time[0] == 0.0 and after.commands_received[0] == 0 and not after.auto_reset.any()
        assert np.array_equal(after.joint_position[0], fresh.joint_position[0])
        # the client's time limit: end_episode resets whatever the joints say; -1 never resets
        assert b.step(1, [], [], [], auto_reset_seeds=[-1, 5, 6], end_episode=[True, True, False]) == ""
        s = b.state()
        assert s.auto_reset.tolist() == [False, True, False] and s.reset.joint_position.shape[0] == 1
        # no auto-reset asked: empty mask, no reset state
        assert b.step(1, [], [], []) == "" and b.state().auto_reset.size == 0 and b.state().reset is None
    finally:
        b.close()
        ref.close()


def test_bad_auto_reset_requests_are_refused():
    b = batch(n=2)
    try:
        assert "auto_reset_seeds has 1 entries" in b.step(1, [], [], [], auto_reset_seeds=[1])
        assert "end_episode has 3 entries" in b.step(1, [], [], [], auto_reset_seeds=[1, 2], end_episode=[1, 0, 1])
        assert "not joints of scene" in b.step(1, [], [], [], [1, 2], (), ["no_joint"], [1.0])
        assert "end_abs_limits" in b.step(1, [], [], [], [1, 2], (), [b.joint_names[0]], [])
        assert "finite" in b.step(1, [], [], [], [1, 2], (), [b.joint_names[0]], [float("nan")])
    finally:
        b.close()
