"""Unit tests of the bridge's core (rlstack_sim.core) on the real PyBullet backend, no ROS."""

import math

import pytest

from rlstack_sim.commands import VelocityLimiter
from rlstack_sim.config import ConfigError, RateMeter
from rlstack_sim.core import (
    BaseOdometry,
    CommandHandler,
    Stepper,
    apply_moves,
    apply_reset,
    check_object_lists,
    check_reset,
    diagnostic_values,
    make_backend,
)
from rlstack_sim.parameters import bridge_parameters, depth_noise, odometry_errors
from sim_bridges import Capability, make_scene, scene_names

PERIOD = 1.0 / 60.0


class Log:
    def __init__(self):
        self.info, self.warning = [], []


def bridge(scene: str, mode: str = "lockstep", timeout: float = 0.5, k_state=1, k_gt=6, k_cam=None):
    """(sim, commands, stepper, log, channels) the way the node wires them, on ``scene``."""
    sim = make_backend("pybullet", scene, physics_rate_hz=240.0, control_rate_hz=60.0, gui=False)
    sim.load_scene(scene, seed=0)
    log = Log()
    now = {"t": 0.0}
    cmd = CommandHandler(sim, VelocityLimiter(1.0, 2.0, 1.0, 3.0), timeout, 0.05,
                         lambda: sim.sim_time, log.info.append, log.warning.append)
    channels = cmd.configure(make_scene(scene), sim.joint_limits(), sim.capabilities, Capability)
    stepper = Stepper(sim, cmd, mode, PERIOD, k_state, k_gt, k_cam, False)
    return sim, cmd, stepper, log, channels, now


@pytest.fixture
def cartpole():
    sim, *rest = bridge("cartpole")
    yield (sim, *rest)
    sim.close()


@pytest.fixture
def home():
    sim, *rest = bridge("home")
    yield (sim, *rest)
    sim.close()


def test_channels_follow_the_scene(cartpole, home):
    assert cartpole[4] == ["cart_force"]
    assert cartpole[1].watchdog.channels == ("cart",)
    assert home[4][0] == "cmd_vel" and "gripper" in home[4] and "cart_force" not in home[4]
    assert home[1].watchdog.channels[0] == "base"


def test_bad_commands_are_counted_not_applied(cartpole):
    sim, cmd, stepper, log, _, _ = cartpole
    cmd.cart_force(math.nan)
    cmd.cart_force(1e9)
    cmd.cart_force(math.nan)
    assert cmd.rejects.counts == {"cart_force/non_finite": 2, "cart_force/out_of_range": 1}
    assert cmd.commands_received == 0
    assert len(log.warning) == 2   # once per kind per period
    cmd.cart_force(1.0)
    assert cmd.commands_received == 1 and cmd.watchdog.state("cart") == "active"


def test_watchdog_puts_a_stale_channel_in_its_safe_state_in_sim_time(cartpole):
    sim, cmd, stepper, log, _, _ = cartpole
    cmd.cart_force(5.0)
    published = []
    stepper.run(20, lambda: published.append(stepper.steps))   # 0.33 s < 0.5 s
    assert cmd.watchdog.state("cart") == "active"
    stepper.run(20, lambda: None)
    assert cmd.watchdog.state("cart") == "timed_out" and cmd.watchdog.timeouts == 1
    assert any("no 'cart' command" in w for w in log.warning)
    # the deadline splits the batch: the watchdog fired at 0.5 s of sim time, not at the end of the run
    assert stepper.steps == 40 and sim.sim_time == pytest.approx(40 * PERIOD)


def test_base_commands_clip_ramp_and_stop(home):
    sim, cmd, stepper, log, _, _ = home
    cmd.cmd_vel(5.0, 0.0, (0.0, 0.0, 0.0, 0.0))
    assert cmd.clipped == {"cmd_vel": 1} and cmd.limiter.target == (1.0, 0.0)
    stepper.run(6, lambda: None)
    assert cmd.limiter.current[0] == pytest.approx(6 * PERIOD * 1.0)   # 1 m/s^2 ramp
    cmd.cmd_vel(0.2, math.inf, ())
    assert cmd.rejects.counts == {"cmd_vel/non_finite": 1}


def test_gripper_logs_changes_only(home):
    sim, cmd, stepper, log, _, _ = home
    cmd.gripper(True)
    cmd.gripper(True)
    cmd.gripper(False)
    assert log.info == ["gripper: open", "gripper: close"]
    assert cmd.commands_received == 3


def test_gripper_yaw_channel_checks_and_feeds_the_arm_watchdog(home):
    sim, cmd, stepper, log, channels, _ = home
    assert "ee_yaw" in channels
    cmd.ee_yaw(math.nan)
    cmd.ee_yaw(2.0)        # beyond +-pi/2: a two-finger gripper is symmetric under a half turn
    assert cmd.rejects.counts == {"ee_yaw/non_finite": 1, "ee_yaw/out_of_range": 1}
    assert cmd.commands_received == 0
    cmd.ee_yaw(0.5)
    assert cmd.commands_received == 1 and cmd.watchdog.state("arm") == "active"


def test_stepper_schedules_streams_and_resets(cartpole):
    sim, cmd, stepper, *_ = cartpole
    assert stepper.due(force=True) == ["clock", "state", "ground_truth"]
    assert stepper.due() == []
    published = []
    stepper.run(12, lambda: published.append((stepper.steps, stepper.due())), publish_inside=True)
    assert published[5] == (6, ["clock", "state", "ground_truth"])
    assert published[0] == (1, ["clock", "state"])
    stepper.reset()
    assert stepper.steps == 0 and stepper.steps_total == 12


def test_pause_and_realtime_factor(cartpole):
    sim, cmd, stepper, *_ = cartpole
    assert stepper.set_paused(True) == "paused" and stepper.paused
    assert stepper.set_paused(False) == "running"
    assert stepper.realtime_factor(100.0) == 0.0
    stepper.run(60, lambda: None)
    assert stepper.realtime_factor(102.0) == pytest.approx(0.5)


def test_reset_requests():
    assert check_reset("nowhere", scene_names(), 0, 0).startswith("unknown scene 'nowhere'")
    assert "differ in length" in check_reset("home", scene_names(), 2, 1)
    assert check_reset("home", scene_names(), 1, 1) == ""
    assert "differ in length" in check_object_lists(0, 1) and check_object_lists(2, 2) == ""   # ~/move_objects too


def test_apply_reset_reports_and_recovers(cartpole):
    sim = cartpole[0]
    assert apply_reset(sim, "cartpole", lambda: "cartpole", 3, [], lambda *_: None) == ""
    failed = apply_reset(sim, "cartpole", lambda: "cartpole", 3, [("no_such_object", [0, 0, 0], [0, 0, 0, 1])],
                         lambda *_: None)
    assert failed.startswith("reset failed:")
    loads = []
    apply_reset(sim, "ball_plate", lambda: "cartpole", 1, [], lambda s, seed: loads.append((s, seed)))
    assert loads == [("ball_plate", 1)]


def test_apply_moves_places_objects_now_or_nothing(home):
    """The bridge's ~/move_objects (evaluators, tests): objects placed at rest without a reset;
    a bad request moves nothing."""
    sim = home[0]
    sim.step(5)
    t = sim.sim_time
    before = {n: list(o.pose.position) for n, o in sim.ground_truth().items()}
    assert apply_moves(sim, [("red_cube", [1.0, 0.5, 0.025], [0, 0, 0, 1])]) == ""
    assert sim.sim_time == t                                           # no reset
    sim.step(30)
    moved = sim.ground_truth()["red_cube"].pose.position
    assert moved[0] == pytest.approx(1.0, abs=0.01) and moved[1] == pytest.approx(0.5, abs=0.01)
    assert sim.ground_truth()["blue_cube"].pose.position[0] == pytest.approx(before["blue_cube"][0], abs=1e-3)
    for bad, why in ((("no_such", [0, 0, 0.1], [0, 0, 0, 1]), "unknown object 'no_such'"),
                     (("red_cube", [math.nan, 0, 0.1], [0, 0, 0, 1]), "not finite"),
                     (("red_cube", [0, 0, 0.1], [0, 0, 0, 2]), "not a unit quaternion")):
        assert why in apply_moves(sim, [("blue_cube", [2.0, 2.0, 0.025], [0, 0, 0, 1]), bad])
    assert sim.ground_truth()["blue_cube"].pose.position[0] == pytest.approx(before["blue_cube"][0], abs=1e-3)


def test_diagnostics_values(cartpole):
    sim, cmd, stepper, *_ = cartpole
    cmd.cart_force(math.nan)
    meters = {k: RateMeter() for k in ("state", "ground_truth", "step_calls")}
    warn, message, values = diagnostic_values(stepper, cmd, "cartpole", 60.0, meters, {}, 1.0)
    assert not warn and message == "lockstep, rtf 0.00"
    assert values["rejected.cart_force/non_finite"] == "1" and values["watchdog"] == "cart=idle"
    assert list(values)[-2:] == ["base_stalls", "gripper_stalls"] and values["gripper_stalls"] == "0"


def test_wheel_odometry_drifts_from_the_truth(home):
    sim, cmd, stepper, *_ = home
    values = {p.name: p.default for p in bridge_parameters(scene_names(), ("pybullet",))}
    odo = BaseOdometry(sim, True, odometry_errors(values), seed=0)
    assert odo.configure(make_scene("home"), True)
    odo.reset(True)
    first, cov = odo.get(0)
    truth = sim.base_odometry()
    assert cov is not None and first.pose.position[0] == pytest.approx(truth.pose.position[0])
    assert odo.get(0)[0] is first   # once per step
    assert BaseOdometry(sim, False, odometry_errors(values), 0).get(0)[1] is None



def test_odom_gyro_turns_the_odometry_with_a_base_that_turns_in_place_of_its_wheels(home):
    """odom_gyro: the bridge's /odom heading follows the base's true turn when the wheels do not
    (the base turned by hand here, as the arm's swing slid it in the fetch graph)."""
    import math

    import pybullet as p

    sim, *_ = home
    values = {p_.name: p_.default for p_ in bridge_parameters(scene_names(), ("pybullet",))}
    assert values["odom_gyro"] is False
    with_gyro = BaseOdometry(sim, True, odometry_errors({**values, "odom_gyro": True, "odom_gyro_noise": 0.0}), 0)
    wheels_only = BaseOdometry(sim, True, odometry_errors(values), 0)
    for odo in (with_gyro, wheels_only):
        assert odo.configure(make_scene("home"), True)
        odo.reset(True)
        odo.get(0)
    # turn the base without its wheels (a slide): raw PyBullet through the test-only accessors
    body, cid = sim.body_id(sim.scene_spec.robots[0].name), sim.client_id
    pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
    yaw0 = p.getEulerFromQuaternion(orn)[2]
    p.resetBasePositionAndOrientation(body, pos, p.getQuaternionFromEuler((0, 0, yaw0 + 0.04)), physicsClientId=cid)
    sim.step(1)

    def yaw(odo):
        q = odo.get(1)[0].pose.orientation
        return math.atan2(2 * (q[3] * q[2] + q[0] * q[1]), 1 - 2 * (q[1] ** 2 + q[2] ** 2))
    assert yaw(with_gyro) - yaw0 == pytest.approx(0.04, abs=2e-3)
    assert abs(yaw(wheels_only) - yaw0) < 5e-3

def test_parameters_and_backend_errors():
    values = {p.name: p.default for p in bridge_parameters(scene_names(), ("pybullet",))}
    assert len(values) == 40 and not depth_noise(values).enabled
    # the ROS 2 standard simulation services: served by default, under the bridge's name
    assert values["simulation_interfaces"] is True and values["simulation_interfaces_prefix"] == "~"
    assert values["ee_step_period_s"] == 0.0   # one control period unless a graph asks (the MuJoCo fetch)
    ranged = [p for p in bridge_parameters(scene_names(), ("pybullet",)) if p.min_value is not None]
    assert all(p.min_value <= p.default <= p.max_value for p in ranged)
    from sim_bridges.scenes import SCENES, register_scene
    from sim_bridges.scenes.cartpole import make_cartpole_scene

    make_backend("mujoco", "home").close()   # both engines build home (both engines)
    register_scene("pybullet_only_scene", make_cartpole_scene)   # a scene only PyBullet builds
    try:
        with pytest.raises(ConfigError, match="does not build scene 'pybullet_only_scene'"):
            make_backend("mujoco", "pybullet_only_scene")
    finally:
        del SCENES["pybullet_only_scene"]
    with pytest.raises(ConfigError, match="unknown backend 'isaacgym'"):
        make_backend("isaacgym", "home")


def test_fingers_held_shut_are_reported_with_what_holds_them(home):
    """The put-down jam's report: fixed blocks just outside both fingers stop the opening (outside one
    finger only, the hand itself gives way); once the fingers stand still, commanded open, for a
    second of sim time, the bridge warns once with the finger positions, their efforts and what the
    simulator says touches them."""
    import numpy as np
    import pybullet as p

    sim, cmd, stepper, log, _, _ = home
    cid = sim.client_id   # the test-only accessor: the blocks below are raw PyBullet bodies

    def finger_positions():
        return [np.array(sim.body_pose(link).position) for link in ("panda_leftfinger", "panda_rightfinger")]

    cmd.gripper(False)
    stepper.run(120, lambda: None)
    closed = finger_positions()
    cmd.gripper(True)
    stepper.run(120, lambda: None)
    opened = finger_positions()
    cmd.gripper(False)
    stepper.run(120, lambda: None)
    block = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.03, 0.003, 0.03], physicsClientId=cid)
    for c, o in zip(closed, opened):
        outward = (o - c) / np.linalg.norm(o - c)
        p.createMultiBody(0, block, basePosition=((c + o) / 2 + 0.015 * outward).tolist(), physicsClientId=cid)

    cmd.gripper(True)
    reports = []
    for _ in range(16):                                 # 4 s, checked every 0.25 s as diagnostics would
        stepper.run(15, lambda: None)
        reports.append(cmd.check_gripper_stall())
    assert reports[0] == "" and reports[-1] == "gripper stalled: commanded open but not opening", reports
    assert len(log.warning) == 1 and cmd.gripper_monitor.stalls == 1   # warned once per stall
    warning = log.warning[0]
    assert "gripper stalled" in warning and "touches body" in warning and "normal force" in warning, warning
    js = sim.joint_state()
    assert sum(float(v) for n, v in zip(js.names, js.position) if "finger" in n) < 0.06
    cmd.gripper(False)                                  # commanded closed: no stall any more
    stepper.run(30, lambda: None)
    assert cmd.check_gripper_stall() == ""
