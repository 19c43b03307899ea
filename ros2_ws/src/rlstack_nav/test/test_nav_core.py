"""nav_controller's core (NavCore) without ROS: goals and their frames, the control cycle, the
pause while localisation is lost, the odometry watchdog, injected obstacles, depth frames."""

import math

import numpy as np
import pytest

from rlstack_nav.grid import CostParams, OccupancyGrid
from rlstack_nav.nav_core import NavCore, NavOutputs
from rlstack_nav.navigator import Code, NavParams, Navigator
from rlstack_nav.parameters import PARAMS
from rlstack_nav.transforms import se2_compose, se2_inverse, static_chain

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)


def yaw_q(yaw):
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


class Outputs(NavOutputs):
    """Records what the node would publish."""

    def __init__(self):
        self.calls = []

    def stop(self):
        self.calls.append(("stop",))

    def command(self, v, w):
        self.calls.append(("command", v, w))

    def plan(self, empty=False):
        self.calls.append(("plan", empty))

    def feedback(self, state, distance_remaining):
        self.calls.append(("feedback", state))

    def goal_done(self, result):
        self.calls.append(("done", result.code))

    def kinds(self):
        return [c[0] for c in self.calls]


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def make_core(**overrides):
    g = OccupancyGrid(np.zeros((80, 120), np.int8), 0.05)
    g.data[0, :] = g.data[-1, :] = 100
    g.data[:, 0] = g.data[:, -1] = 100
    cfg = {p.name: p.default for p in PARAMS}
    cfg.update(overrides)
    out, clock, info, warning = Outputs(), Clock(), [], []
    nav = Navigator(g, NavParams(cost=CostParams(robot_radius=0.3, inflation_radius=0.6)))
    return NavCore(nav, cfg, out, clock, info.append, warning.append), out, clock, info, warning


def test_frames():
    a = (1.0, 2.0, 0.5)
    assert se2_compose(a, se2_inverse(a)) == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)
    m = np.eye(4)
    m[0, 3] = 0.2
    links = {"cam": ("mast", m), "mast": ("base_link", m)}
    assert static_chain(links, "base_link", "cam", 21)[0, 3] == pytest.approx(0.4)
    assert static_chain(links, "base_link", "cam", 1) is None
    assert static_chain(links, "base_link", "nowhere", 21) is None


def test_goals_are_refused_with_reasons_before_odometry_and_in_unknown_frames():
    core, out, clock, info, warning = make_core()
    res = core.start_goal("map", 2.0, 2.0, IDENTITY_Q, 0.0, 0.0, "test")
    assert res.code == Code.STALE_ODOMETRY and "no odometry received" in res.reason
    assert core.start_goal("base_link", 2.0, 2.0, IDENTITY_Q, 0, 0, "t").code == Code.INVALID_GOAL
    assert core.start_goal("map", math.nan, 2.0, IDENTITY_Q, 0, 0, "t").code == Code.INVALID_GOAL
    assert core.start_goal("map", 1.0, 2.0, (0, 0, 0, 0), 0, 0, "t").reason == "goal orientation is a zero quaternion"
    assert core.counts == {"goal": 3} and len(warning) == 1   # throttled: once per kind per 5 s


def test_odom_goal_is_converted_with_map_to_odom():
    core, *_ = make_core(map_to_odom_x=1.0, map_to_odom_yaw=math.pi / 2)
    goal, why = core.goal_in_map("odom", 1.0, 0.0, IDENTITY_Q)
    assert why == "" and goal == pytest.approx((1.0, 1.0, math.pi / 2))


def test_a_goal_runs_on_odometry_and_ends_with_outputs():
    core, out, clock, info, warning = make_core()
    assert core.odometry(1.0, 2.0, 0.1, IDENTITY_Q, 0.0) is False   # no goal: no cycle
    assert core.start_goal("map", 1.5, 2.0, IDENTITY_Q, 0.1, 0.5, "test") is None
    assert out.kinds() == ["plan"] and info[-1].startswith("goal (1.50, 2.00, 0.00) from test")
    assert core.odometry(1.0, 2.0, 0.1, IDENTITY_Q, 0.05) is True
    core.control_cycle(has_handle=True, cancel_requested=False)
    assert out.calls[-2][0] == "command" and out.calls[-1] == ("feedback", "FOLLOWING")
    assert core.odometry(1.0, 2.0, 0.1, IDENTITY_Q, 0.06) is False   # within one control period
    core.control_cycle(has_handle=True, cancel_requested=True)
    assert out.calls[-3:] == [("stop",), ("plan", True), ("done", Code.CANCELED)]
    assert core.results["CANCELED"] == 1 and not core.nav.active


def test_lost_localisation_pauses_then_aborts():
    core, out, clock, info, warning = make_core(localization_lost_timeout_s=1.0)
    core.odometry(1.0, 2.0, 0.0, IDENTITY_Q, 0.0)
    assert core.start_goal("map", 2.0, 2.0, IDENTITY_Q, 0.1, 0.5, "t") is None
    core.set_localization_state("LOST: no match")
    assert warning[-1] == "localisation: LOST: no match; goals refused / paused"
    core.control_cycle(True, False)
    assert out.calls[-2:] == [("stop",), ("feedback", "LOCALIZATION_LOST")] and core.lost_pauses == 1
    clock.t += 2.0
    core.control_cycle(True, False)
    assert out.calls[-1] == ("done", Code.LOCALIZATION_LOST)
    assert core.start_goal("map", 2.0, 2.0, IDENTITY_Q, 0, 0, "t").code == Code.LOCALIZATION_LOST
    core.set_localization_state("OK")
    assert info[-1] == "localisation: OK; goals resume"


def test_watchdog_aborts_on_stale_odometry_and_keeps_the_base_stopped():
    core, out, clock, info, warning = make_core()
    core.odometry(1.0, 2.0, 0.0, IDENTITY_Q, 0.0)
    core.start_goal("map", 2.0, 2.0, IDENTITY_Q, 0.1, 0.5, "t")
    core.watchdog()
    assert ("done", Code.STALE_ODOMETRY) not in out.calls
    clock.t += core.cfg["odom_timeout_s"] + 0.1
    core.watchdog()
    assert ("done", Code.STALE_ODOMETRY) in out.calls and out.calls[-1] == ("stop",)
    warn, message, kv = core.diagnostics()
    assert warn and message.startswith("odometry stale; last goal STALE_ODOMETRY")
    assert kv["results_stale_odometry"] == "1" and kv["state"] == "IDLE"


def test_bad_odometry_is_rejected_and_time_going_back_starts_over():
    core, *_ = make_core()
    assert core.odometry(math.nan, 0.0, 0.0, IDENTITY_Q, 0.0) is False
    assert core.odometry(0.0, 0.0, 0.0, (0, 0, 0, 0), 0.0) is False
    assert core.counts == {"odometry": 2} and core.odom_pose is None
    for t in (5.0, 5.1, 5.2):
        core.odometry(1.0, 1.0, 0.2, yaw_q(0.3), t)
    assert len(core.odom_history) == 3 and core.base_height == 0.2
    core.odometry(1.0, 1.0, 0.2, yaw_q(0.3), 1.0)   # a simulation reset
    assert len(core.odom_history) == 1 and core.odom_at(7.0)[2] == pytest.approx(0.3)


def test_injected_obstacles():
    core, out, clock, info, warning = make_core()
    core.inject_obstacles("map", [(2.0, 2.0), (math.nan, 1.0)])
    assert core.nav.obstacles.count() > 0 and core.counts == {"obstacle": 1}
    cells = core.nav.obstacles.count()
    core.inject_obstacles("elsewhere", [(3.0, 2.0)])
    assert core.counts == {"obstacle": 2} and len(warning) == 1   # same kind: logged once per 5 s
    assert core.nav.obstacles.count() == cells
    core.inject_obstacles("", [])
    assert core.nav.obstacles.count() == 0 and info[-1].startswith("obstacles cleared")


def test_depth_frames_are_checked_then_fill_the_obstacle_layer():
    core, out, clock, info, warning = make_core()
    core.odometry(1.0, 2.0, 0.0, IDENTITY_Q, 0.0)
    core.set_camera([0.0] * 9, 8, 6)
    assert core.camera is None and core.counts == {"camera_info": 1}
    core.set_camera([4.0, 0, 4.0, 0, 4.0, 3.0, 0, 0, 1], 8, 6)
    depth = np.full((6, 8), 0.5, np.float32)
    core.depth(0.0, "cam", "16UC1", 8, 6, 16, False, depth.tobytes())
    core.depth(0.0, "cam", "32FC1", 8, 6, 32, False, depth.tobytes()[:10])
    core.depth(0.0, "cam", "32FC1", 8, 6, 32, False, depth.tobytes())   # no transform base_link -> cam yet
    assert core.counts["depth"] == 3
    # camera 0.3 m up looking along +x (optical z forward, x right, y down)
    m = np.eye(4)
    m[:3, :3] = [[0, 0, 1], [-1, 0, 0], [0, -1, 0]]
    m[:3, 3] = (0.0, 0.0, 0.3)
    core.static_transform("base_link", "cam", m)
    core.depth(0.0, "cam", "32FC1", 8, 6, 32, False, depth.tobytes())
    assert core.counts["depth"] == 3 and core.last_depth_stamp == 0.0
    assert core.nav.obstacles.count() > 0
