"""How the fetch harness sets a layout up on the simulator (rlstack_mission.harness): the seeded
reset through our extension's ``~/reset`` (no object poses in it), the target placed through the
ROS 2 standard's ``SetEntityState``, inside a standard pause. A fake bridge answers with the real
bridge's own request checks (rlstack_sim.sim_interfaces_core), so a request the bridge would refuse
fails here too."""

from __future__ import annotations

import math
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from rlstack_mission.harness import FetchHarness, check_placements, entity_state_request, layout_placements
from rlstack_mission.layouts import FetchLayout
from rlstack_sim import sim_interfaces_core as core

LAYOUT = FetchLayout(seed=7, target="green_cube", query="the green cube", table="table_3",
                     target_pose=(2.1, -0.4, 0.425, 0.8), dropoff=(0.4, 0.6, 0.0))
OBJECTS = ("green_cube", "red_cube", "yellow_ball")


class FakeBridge:
    """Answers the harness's service calls as sim_bridge does (``mode``: realtime or lockstep) and
    records them in order."""

    def __init__(self, mode: str = "realtime", reset_ok: bool = True, objects=OBJECTS) -> None:
        self.mode, self.paused, self.reset_ok, self.objects = mode, False, reset_ok, set(objects)
        self.calls = []
        self.placed = {}

    def answer(self, name: str, request):
        """The reply the bridge would give: the fields the harness reads (``success``/``message``,
        or the standard's ``result.result``/``result.error_message``)."""
        if name == "/sim_bridge/reset":
            self.calls.append(("reset", request.seed, list(request.object_names), len(request.object_poses)))
            return SimpleNamespace(success=self.reset_ok, message="" if self.reset_ok else "reset failed: boom")
        if name == "/sim_bridge/set_simulation_state":
            outcome, action = core.plan_state_change(self.mode, self.paused, int(request.state.state))
            self.calls.append(("state", request.state.state, outcome.code))
            if action in ("pause", "play"):
                self.paused = action == "pause"
            return standard_reply(outcome)
        if name == "/sim_bridge/set_entity_state":
            st = request.state
            p, q = st.pose.position, st.pose.orientation
            position, quaternion = [p.x, p.y, p.z], [q.x, q.y, q.z, q.w]
            tw, acc = st.twist, st.acceleration
            outcome = core.check_set_entity_state(
                self.objects, self.objects, request.entity, st.header.frame_id, "map", request.set_pose, position,
                quaternion, request.set_twist, [tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x, tw.angular.y,
                                                tw.angular.z],
                request.set_acceleration, [acc.linear.x, acc.linear.y, acc.linear.z, acc.angular.x, acc.angular.y,
                                           acc.angular.z])
            self.calls.append(("set_entity_state", request.entity, outcome.code))
            if outcome.ok and request.set_pose:
                self.placed[request.entity] = (tuple(position), tuple(quaternion))
            return standard_reply(outcome)
        if name == "/semantic_map/clear":
            self.calls.append(("clear",))
            return SimpleNamespace(success=True, message="")
        raise AssertionError(f"unexpected service {name}")


def standard_reply(outcome: core.Outcome):
    return SimpleNamespace(result=SimpleNamespace(result=outcome.code, error_message=outcome.message))


class FakeClient:
    def __init__(self, bridge: FakeBridge, name: str) -> None:
        self.bridge, self.srv_name = bridge, name

    def wait_for_service(self, timeout_sec: float = 0.0) -> bool:
        return True

    def call_async(self, request):
        reply = self.bridge.answer(self.srv_name, request)
        return SimpleNamespace(done=lambda: True, result=lambda: reply)


class FakeNode:
    def __init__(self, bridge: FakeBridge) -> None:
        self.bridge = bridge

    def create_client(self, srv_type, name):
        return FakeClient(self.bridge, name)

    def create_subscription(self, *args, **kwargs):
        return None

    def create_publisher(self, *args, **kwargs):
        return SimpleNamespace(publish=lambda msg: None)

    def count_subscribers(self, topic: str) -> int:
        return 0   # no localiser: nothing to relocalise


def harness(bridge: FakeBridge) -> FetchHarness:
    h = FetchHarness(FakeNode(bridge))
    h.wait_ground_truth = lambda timeout=30.0: {n: (0.0, 0.0, 0.0) for n in bridge.objects}
    return h


def test_a_layout_places_its_target_where_the_extension_reset_did():
    """The pose sent is the one the extension's ``~/reset`` carried in ``object_poses``: the layout's
    x, y, z and its yaw as a quaternion about z."""
    (name, position, quaternion), = layout_placements(LAYOUT)
    assert name == "green_cube" and position == (2.1, -0.4, 0.425)
    assert quaternion == pytest.approx((0.0, 0.0, math.sin(0.4), math.cos(0.4)))
    assert quaternion == LAYOUT.quaternion()


def test_apply_pauses_resets_with_the_seed_places_with_the_standard_and_plays():
    bridge = FakeBridge("realtime")
    harness(bridge).apply(LAYOUT)
    assert bridge.calls == [("state", 2, core.RESULT_OK),            # STATE_PAUSED
                            ("reset", 7, [], 0),                      # seed only: no object poses
                            ("set_entity_state", "green_cube", core.RESULT_OK),
                            ("state", 1, core.RESULT_OK),             # STATE_PLAYING
                            ("clear",)]
    position, quaternion = bridge.placed["green_cube"]
    assert position == pytest.approx(LAYOUT.target_pose[:3]) and quaternion == pytest.approx(LAYOUT.quaternion())
    assert not bridge.paused


def test_a_simulator_paused_already_is_left_paused():
    bridge = FakeBridge("lockstep")   # always paused in the standard's sense; playing it is refused
    harness(bridge).apply(LAYOUT)
    assert [c[0] for c in bridge.calls] == ["state", "reset", "set_entity_state", "clear"]
    assert bridge.calls[0] == ("state", 2, core.ALREADY_IN_TARGET_STATE)


def test_a_failed_reset_places_nothing_and_plays_again():
    bridge = FakeBridge("realtime", reset_ok=False)
    with pytest.raises(RuntimeError, match="boom"):
        harness(bridge).apply(LAYOUT)
    assert [c[0] for c in bridge.calls] == ["state", "reset", "state"] and not bridge.paused


def test_a_refused_placement_raises_with_the_simulators_reason_and_plays_again():
    bridge = FakeBridge("realtime", objects=("red_cube",))   # no green_cube in this scene
    with pytest.raises(RuntimeError, match="unknown entity 'green_cube'"):
        harness(bridge).apply(LAYOUT)
    assert bridge.calls[-2] == ("set_entity_state", "green_cube", core.RESULT_NOT_FOUND)
    assert bridge.calls[-1][0] == "state" and not bridge.paused


def test_placements_are_checked_before_any_is_sent():
    good = ("red_cube", (1.0, 0.0, 0.03), (0.0, 0.0, 0.0, 1.0))
    assert check_placements([good]) == ""
    assert "twice" in check_placements([good, good])
    assert "not finite" in check_placements([good, ("green_cube", (math.nan, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))])
    assert "unit quaternion" in check_placements([("green_cube", (0.0, 0.0, 0.0), (0.0, 0.0, 0.5, 0.5))])
    assert "a quaternion" in check_placements([("green_cube", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))])
    bridge = FakeBridge()
    with pytest.raises(RuntimeError, match="unit quaternion"):
        harness(bridge).place([good, ("green_cube", (0.0, 0.0, 0.0), (0.0, 0.0, 0.5, 0.5))])
    assert bridge.calls == []   # all or nothing: the good one was not sent either


def test_set_entity_state_answers_what_the_simulator_said():
    """The fault injection's drop: one object placed now, no reset."""
    bridge = FakeBridge()
    h = harness(bridge)
    assert h.set_entity_state("red_cube", (0.5, 0.2, 0.03), (0.0, 0.0, 0.0, 1.0)) == (True, "moved red_cube")
    ok, message = h.set_entity_state("blue_duck", (0.5, 0.2, 0.03), (0.0, 0.0, 0.0, 1.0))
    assert not ok and "unknown entity 'blue_duck'" in message
    assert [c[0] for c in bridge.calls] == ["set_entity_state"] * 2


def test_the_request_is_a_pose_at_rest_in_the_world_frame():
    req = entity_state_request("red_cube", (1.0, 2.0, 0.03), (0.0, 0.0, 0.6, 0.8))
    assert req.entity == "red_cube" and req.set_pose and req.set_twist and not req.set_acceleration
    assert req.state.header.frame_id == ""   # the simulator's world frame (the bridge's ground-truth frame)
    t = req.state.twist
    assert [t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z] == [0.0] * 6
    p, q = req.state.pose.position, req.state.pose.orientation
    assert (p.x, p.y, p.z, q.x, q.y, q.z, q.w) == (1.0, 2.0, 0.03, 0.0, 0.0, 0.6, 0.8)


class LocalisedNode(FakeNode):
    """A graph with a localiser and navigation listening: what the harness publishes is kept."""

    def __init__(self, bridge: FakeBridge) -> None:
        super().__init__(bridge)
        self.published = []

    def create_publisher(self, msg_type, topic, *args, **kwargs):
        return SimpleNamespace(publish=lambda msg: self.published.append((topic, msg)))

    def count_subscribers(self, topic: str) -> int:
        return 1


def test_the_layout_waits_for_the_localiser_to_agree_with_the_truth():
    """After a reset the localiser's estimate must come within 5 cm and 0.05 rad of where the robot
    stands before navigation's obstacles and the map are cleared: frames taken in through the old
    pose left phantom obstacles and objects. An estimate 20 cm off is not enough; none in time: False;
    no localiser: None."""
    h = FetchHarness(LocalisedNode(FakeBridge("realtime")))
    h.true_base = (1.0, 2.0, math.sin(0.25), math.cos(0.25))        # yaw 0.5 rad
    timers = [threading.Timer(0.05, lambda: setattr(h, "latest_estimate", (1.2, 2.0, 0.5))),
              threading.Timer(0.3, lambda: setattr(h, "latest_estimate", (1.01, 2.02, 0.52)))]
    for t in timers:
        t.start()
    t0 = time.monotonic()
    assert h.wait_localised(timeout=5.0)
    assert time.monotonic() - t0 >= 0.25                                 # not on the estimate 20 cm off
    h.true_base = (1.0, 2.0, math.sin(1.0), math.cos(1.0))          # now 2 rad: the estimate is off in heading
    assert h.wait_localised(timeout=0.2) is False                     # the result records the start
    assert FetchHarness(FakeNode(FakeBridge("realtime"))).wait_localised(timeout=0.2) is None   # no localiser


def test_clearing_sensed_obstacles_sends_navigation_an_empty_obstacle_message():
    node = LocalisedNode(FakeBridge("realtime"))
    h = FetchHarness(node)
    h.clear_sensed_obstacles()
    (topic, msg), = [(t, m) for t, m in node.published if t == "/nav_controller/obstacles"]
    assert msg.header.frame_id == "map" and len(msg.poses) == 0


def test_a_failed_fetch_leaves_navigations_sensed_obstacles_as_a_map(tmp_path):
    """The latest /nav_controller/obstacle_grid is written as a map (YAML + PGM) that loads back with
    its marked cell where navigation had it; without a grid there is nothing to write."""
    from nav_msgs.msg import OccupancyGrid

    from rlstack_nav.map_io import load_map

    h = FetchHarness(FakeNode(FakeBridge("realtime")))
    assert h.save_obstacle_grid(tmp_path / "none") is None
    msg = OccupancyGrid()
    msg.info.width, msg.info.height, msg.info.resolution = 4, 3, 0.05
    msg.info.origin.position.x, msg.info.origin.position.y = -0.1, 0.2
    msg.info.origin.orientation.w = 1.0
    data = [0] * 12
    data[1 * 4 + 2] = 100            # row 1 (y), column 2 (x): centre (-0.1 + 2.5 * 0.05, 0.2 + 1.5 * 0.05)
    msg.data = data
    h._on_obstacle_grid(msg)
    yml = h.save_obstacle_grid(tmp_path / "obstacles_seed7")
    assert yml == str(tmp_path / "obstacles_seed7.yaml") and (tmp_path / "obstacles_seed7.pgm").is_file()
    back = load_map(yml)
    assert back.data.shape == (3, 4) and back.resolution == pytest.approx(0.05)
    assert back.origin[:2] == pytest.approx((-0.1, 0.2))
    assert [tuple(c) for c in np.argwhere(back.data == 100)] == [(1, 2)]


def test_each_judged_estimate_keeps_the_wheel_odometry_beside_the_truth():
    """An /amcl_pose estimate is judged against the truth nearest its stamp, and the wheel odometry of
    that moment is kept with it: slip (odometry ahead of the truth) tells itself from a localiser's
    wrong correction (the estimate alone ahead) in a failed fetch's trace."""
    import collections

    h = FetchHarness(FakeNode(FakeBridge("realtime")))
    h._truth_hist = collections.deque([(10.0, 1.0, 0.0, 0.0), (10.1, 1.01, 0.0, 0.0)])
    h.odom = (0.5, 0.2)
    msg = SimpleNamespace(header=SimpleNamespace(stamp=SimpleNamespace(sec=10, nanosec=90_000_000)),
                          pose=SimpleNamespace(pose=SimpleNamespace(
                              position=SimpleNamespace(x=1.21, y=0.0, z=0.0),
                              orientation=SimpleNamespace(x=0.0, y=0.0, z=0.0, w=1.0))))
    h._on_estimate(msg)
    (err, yaw_err, stamp, ex, ey, tx, ty, ox, oy), = h.loc_errors
    assert err == pytest.approx(0.2) and yaw_err == 0.0 and stamp == pytest.approx(10.09)
    assert (ex, ey, tx, ty, ox, oy) == (1.21, 0.0, 1.01, 0.0, 0.5, 0.2)
