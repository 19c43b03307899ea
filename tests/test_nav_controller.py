"""nav_controller (rlstack_nav) against the simulator bridge, as real processes.

Reach a goal through the NavigateTo action; refusals (unreachable, occupied, outside) within 1 s;
cancel; stale odometry stops the base; a path blocked by an obstacle the map does not know (seen by
the depth camera) is replanned, then the goal aborts BLOCKED with the reason. Each test has its own
ROS domain and waits by discovery or for messages, never by sleeping.
"""

from __future__ import annotations

import math
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import OccupancyGrid, Odometry, Path
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from rlstack_interfaces.action import NavigateTo

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
NAV_TIME = 60.0  # s, wall-clock bound on a single goal in these tests


# ----------------------------------------------------------------------------------- helpers
def start_bridge(ros_processes, params_dir, **params):
    base = {"scene": "home", "mode": "realtime", "camera_rate_hz": 5.0, "ground_truth_rate_hz": 0.0}
    base.update(params)
    return ros_processes.start_node("rlstack_sim", "sim_bridge", params_file=params_dir / "sim_bridge.yaml",
                                    params=base)


def start_nav(ros_processes, params_dir, repo, **params):
    base = {"map_yaml": str(repo / "maps" / "home.yaml"), "use_sim_time": True}
    base.update(params)
    return ros_processes.start_node("rlstack_nav", "nav_controller", params_file=params_dir / "nav_controller.yaml",
                                    params=base)


def yaw_of(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def pose_msg(x, y, yaw, frame="map") -> PoseStamped:
    p = PoseStamped()
    p.header.frame_id = frame
    p.pose.position.x, p.pose.position.y = float(x), float(y)
    p.pose.orientation.z, p.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return p


class Navigate:
    """A NavigateTo client on the probe's node."""

    def __init__(self, probe):
        self.probe = probe
        self.client = ActionClient(probe.node, NavigateTo, "/navigate_to")
        probe.spin_until(lambda: self.client.server_is_ready(), 20.0, "navigate_to action server")
        self.feedback = []

    def send(self, x, y, yaw, frame="map", xy_tol=0.0, yaw_tol=0.0):
        goal = NavigateTo.Goal(pose=pose_msg(x, y, yaw, frame), position_tolerance=xy_tol, yaw_tolerance=yaw_tol)
        fut = self.client.send_goal_async(goal, feedback_callback=lambda m: self.feedback.append(m.feedback))
        self.probe.spin_until(fut.done, 10.0, "goal acceptance")
        handle = fut.result()
        assert handle.accepted
        return handle

    def result(self, handle, timeout=NAV_TIME):
        fut = handle.get_result_async()
        self.probe.spin_until(fut.done, timeout, "navigate_to result")
        return fut.result().result

    def states(self):
        return [f.state for f in self.feedback]


def wait_nav_odometry(probe, timeout=20.0):
    """Wait until nav_controller reports odometry in /diagnostics (discovery is per pair of nodes)."""
    diags = probe.subscribe("/diagnostics", DiagnosticArray)

    def has_odom():
        for msg in diags.pop_all():
            for st in msg.status:
                if st.name.startswith("nav_controller"):
                    values = {kv.key: kv.value for kv in st.values}
                    if values.get("odometry_age_s", "never") != "never" and float(values["odometry_age_s"]) < 0.5:
                        return True
        return False

    probe.spin_until(has_odom, timeout, "nav_controller receiving odometry")


def latest(queue):
    msgs = queue.pop_all()
    return msgs[-1] if msgs else None


# ------------------------------------------------------------------------------------- tests
def test_reaches_a_goal_through_the_action_with_feedback_plan_and_map(ros_processes, ros_probe, params_dir, repo):
    start_bridge(ros_processes, params_dir)
    start_nav(ros_processes, params_dir, repo)
    maps = ros_probe.subscribe("/map", OccupancyGrid, LATCHED)
    plans = ros_probe.subscribe("/plan", Path, LATCHED)
    odom = ros_probe.subscribe("/odom", Odometry)
    nav = Navigate(ros_probe)
    ros_probe.wait_for_messages(maps, 1, timeout=20)
    ros_probe.wait_for_messages(odom, 1, timeout=20)
    wait_nav_odometry(ros_probe)
    grid = maps.pop_all()[0]
    assert grid.header.frame_id == "map" and grid.info.resolution == pytest.approx(0.05)
    assert (grid.info.width, grid.info.height) == (172, 132)

    handle = nav.send(1.2, -0.6, math.pi / 2)
    res = nav.result(handle)
    assert res.code == NavigateTo.Result.SUCCEEDED, res.reason
    assert res.final_distance <= 0.05 and res.final_yaw_error <= 0.1
    # the simulator's pose (ground-truth odometry) agrees
    ros_probe.spin_for(0.3)
    o = latest(odom)
    assert math.hypot(o.pose.pose.position.x - 1.2, o.pose.pose.position.y + 0.6) <= 0.05
    assert abs(math.remainder(yaw_of(o.pose.pose.orientation) - math.pi / 2, 2 * math.pi)) <= 0.1
    states = set(nav.states())
    assert {"ROTATING", "FOLLOWING", "APPROACHING"} <= states, states
    assert all(f.distance_remaining >= 0 for f in nav.feedback)
    got = plans.pop_all()
    assert any(len(p.poses) > 10 and p.header.frame_id == "map" for p in got)
    first = next(p for p in got if p.poses)
    end = first.poses[-1].pose.position
    assert end.x == pytest.approx(1.2) and end.y == pytest.approx(-0.6)
    ros_processes.assert_all_alive()


def test_refused_goals_answer_within_one_second_with_a_reason(ros_processes, ros_probe, params_dir, repo):
    start_bridge(ros_processes, params_dir, camera_enabled=False)
    start_nav(ros_processes, params_dir, repo, use_depth=False)
    odom = ros_probe.subscribe("/odom", Odometry)
    nav = Navigate(ros_probe)
    ros_probe.wait_for_messages(odom, 1, timeout=20)
    wait_nav_odometry(ros_probe)
    cases = [
        ((-3.4, -2.4, 0.0, "map"), NavigateTo.Result.UNREACHABLE, "not connected"),   # corner closed off by crate/table
        ((2.2, 1.6, 0.0, "map"), NavigateTo.Result.UNREACHABLE, "inside an obstacle"),  # the pillar
        ((2.2, 1.0, 0.0, "map"), NavigateTo.Result.UNREACHABLE, "closer than the robot radius"),
        ((9.0, 0.0, 0.0, "map"), NavigateTo.Result.INVALID_GOAL, "outside the map"),
        ((1.0, 0.0, 0.0, "base_footprint"), NavigateTo.Result.INVALID_GOAL, "unknown goal frame"),
    ]
    for (x, y, yaw, frame), code, words in cases:
        t0 = time.monotonic()
        res = nav.result(nav.send(x, y, yaw, frame), timeout=5.0)
        elapsed = time.monotonic() - t0
        assert res.code == code and words in res.reason, (x, y, res.code, res.reason)
        assert elapsed < 1.0, f"{words}: answered after {elapsed:.2f} s"
    ros_processes.assert_all_alive()


def test_cancel_stops_the_base(ros_processes, ros_probe, params_dir, repo):
    start_bridge(ros_processes, params_dir, camera_enabled=False)
    start_nav(ros_processes, params_dir, repo, use_depth=False)
    odom = ros_probe.subscribe("/odom", Odometry)
    cmd = ros_probe.subscribe("/cmd_vel", Twist)
    nav = Navigate(ros_probe)
    ros_probe.wait_for_messages(odom, 1, timeout=20)
    wait_nav_odometry(ros_probe)
    handle = nav.send(3.3, 0.0, 0.0)  # straight ahead, 3.3 m
    ros_probe.spin_until(lambda: "FOLLOWING" in nav.states(), 20.0, "FOLLOWING feedback")
    ros_probe.spin_until(lambda: (m := latest(odom)) is not None and m.twist.twist.linear.x > 0.2, 20.0, "driving")
    cancel = handle.cancel_goal_async()
    ros_probe.spin_until(cancel.done, 5.0, "cancel response")
    res = nav.result(handle, timeout=5.0)
    assert res.code == NavigateTo.Result.CANCELED and "cancel" in res.reason
    assert 0.1 < res.final_distance < 3.3
    cmd.pop_all()
    # the base stops: the last command is zero and the odometry speed decays to ~0
    ros_probe.spin_until(lambda: (m := latest(odom)) is not None and abs(m.twist.twist.linear.x) < 0.02, 5.0,
                         "base stopped")
    for m in cmd.pop_all():
        assert m.linear.x == 0.0 and m.angular.z == 0.0
    ros_processes.assert_all_alive()


def test_stale_odometry_stops_the_base_and_aborts(ros_processes, ros_probe, params_dir, repo):
    # fake odometry from the probe (no simulator): it stops, the node must notice and stop the base
    nav_proc = start_nav(ros_processes, params_dir, repo, use_sim_time=False, use_depth=False, odom_timeout_s=0.5)
    odom_pub = ros_probe.publisher("/odom", Odometry)
    cmd = ros_probe.subscribe("/cmd_vel", Twist)
    nav = Navigate(ros_probe)

    def publish_odom():
        m = Odometry()
        m.header.frame_id, m.child_frame_id = "odom", "base_link"
        m.header.stamp = ros_probe.node.get_clock().now().to_msg()
        m.pose.pose.orientation.w = 1.0
        odom_pub.publish(m)

    # odometry flowing at ~30 Hz while the goal starts
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        publish_odom()
        ros_probe.spin_for(0.033)
    handle = nav.send(2.0, 0.0, 0.0)  # straight ahead: the controller commands forward speed
    got_motion = False
    end = time.monotonic() + 5.0
    while time.monotonic() < end and not got_motion:
        publish_odom()
        ros_probe.spin_for(0.033)
        got_motion = any(m.linear.x > 0.0 for m in cmd.pop_all())
    assert got_motion, "no forward command while odometry flowed"
    t_stop = time.monotonic()  # odometry stops here
    res = nav.result(handle, timeout=5.0)
    elapsed = time.monotonic() - t_stop
    assert res.code == NavigateTo.Result.STALE_ODOMETRY and "stale" in res.reason, res.reason
    assert 0.4 < elapsed < 1.5
    ros_probe.spin_for(0.3)
    after = cmd.pop_all()
    assert after and all(m.linear.x == 0.0 and m.angular.z == 0.0 for m in after)
    # a new goal while odometry is stale is refused with the same code
    res = nav.result(nav.send(1.0, 0.0, 0.0), timeout=5.0)
    assert res.code == NavigateTo.Result.STALE_ODOMETRY and "cannot start" in res.reason
    assert nav_proc.alive()


def test_blocked_path_replans_then_aborts_with_the_reason(ros_processes, ros_probe, params_dir, repo, tmp_path):
    """The map misses the crate; the depth camera sees it on the way to the corner behind it. The only
    other ways in are narrower than the robot, so the replans find nothing and the goal ends BLOCKED."""
    from rlstack_nav.home_map import map_from_boxes, scene_boxes
    from rlstack_nav.map_io import save_map

    yml, _ = save_map(map_from_boxes([b for b in scene_boxes("home") if b.name != "crate"]), tmp_path / "nocrate")
    start_bridge(ros_processes, params_dir)
    start_nav(ros_processes, params_dir, repo, map_yaml=str(yml), blocked_timeout=2.0)
    odom = ros_probe.subscribe("/odom", Odometry)
    plans = ros_probe.subscribe("/plan", Path, LATCHED)
    obstacle_grids = ros_probe.subscribe("/nav_controller/obstacle_grid", OccupancyGrid, LATCHED)
    nav = Navigate(ros_probe)
    ros_probe.wait_for_messages(odom, 1, timeout=20)
    wait_nav_odometry(ros_probe)
    handle = nav.send(-3.3, -2.2, 0.0)
    res = nav.result(handle)
    assert res.code == NavigateTo.Result.BLOCKED, (res.code, res.reason)
    assert "obstacles seen by the sensors" in res.reason and "replan" in res.reason
    assert "REPLANNING" in nav.states()
    assert res.final_distance > 0.5
    # the robot stopped short of the crate (x -3.3..-2.7, y -1.1..-0.5): its centre stayed > radius away
    o = latest(odom)
    px, py = o.pose.pose.position.x, o.pose.pose.position.y
    dx = max(-3.3 - px, 0.0, px + 2.7)
    dy = max(-1.1 - py, 0.0, py + 0.5)
    assert math.hypot(dx, dy) > 0.3
    assert len([p for p in plans.pop_all() if p.poses]) >= 1
    # what blocked it is on ~/obstacle_grid (rviz): marked cells on the crate's footprint, none far from it
    ros_probe.spin_for(1.5)   # the grid goes out at most at diagnostics_rate_hz
    grid = latest(obstacle_grids)
    info = grid.info
    marked = [(info.origin.position.x + (i % info.width + 0.5) * info.resolution,
               info.origin.position.y + (i // info.width + 0.5) * info.resolution)
              for i, v in enumerate(grid.data) if v == 100]
    on_crate = [(x, y) for x, y in marked if -3.4 <= x <= -2.6 and -1.2 <= y <= -0.4]
    assert len(on_crate) >= 5, f"{len(marked)} marked cells, {len(on_crate)} on the crate"
    ros_processes.assert_all_alive()


def test_the_missions_recovery_message_clears_what_the_sensors_marked(ros_processes, ros_probe, params_dir, repo):
    """The fetch mission's drop-off recovery (``RosPorts.clear_sensed_obstacles``: an empty PoseArray
    on ~/obstacles) has navigation forget every obstacle it marked: the cells are gone from
    ~/obstacle_grid. (No simulator: nothing but the injected points is marked.)"""
    from types import SimpleNamespace

    from geometry_msgs.msg import Pose, PoseArray

    from rlstack_mission.ros_ports import RosPorts

    start_nav(ros_processes, params_dir, repo, use_sim_time=False)
    grids = ros_probe.subscribe("/nav_controller/obstacle_grid", OccupancyGrid, LATCHED)
    inject = ros_probe.publisher("/nav_controller/obstacles", PoseArray)
    marks = PoseArray()
    marks.header.frame_id = "map"
    for x in (-1.0, -0.9, -0.8):
        p = Pose()
        p.position.x, p.position.y = x, 1.5
        marks.poses.append(p)
    held = {"marked": None}

    def marked_cells():
        msg = latest(grids)
        if msg is not None:
            held["marked"] = sum(1 for v in msg.data if v == 100)
        return held["marked"]

    inject.publish(marks)
    ros_probe.spin_until(lambda: (marked_cells() or 0) >= 3, 10.0, "the injected obstacles on ~/obstacle_grid")
    host = SimpleNamespace(obstacles_pub=inject, get_clock=ros_probe.node.get_clock, obstacle_grid=object(),
                           rate_hz=20.0)
    RosPorts(host, SimpleNamespace(is_cancel_requested=False)).clear_sensed_obstacles()
    assert host.obstacle_grid is None   # the mission's copy is stale until navigation publishes again
    ros_probe.spin_until(lambda: marked_cells() == 0, 10.0, "an obstacle grid with no marked cell")
    ros_processes.assert_all_alive()
