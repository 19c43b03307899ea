"""sim_bridge (rlstack_sim) as a real process: topics, services, watchdog and bad input.

Every test starts its own bridge on its own ROS domain and waits by discovery or for
messages (sim-time stamps), never by sleeping.
"""

from __future__ import annotations

import math

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, Twist, Vector3
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from rlstack_interfaces.srv import ResetSim, SimStep

PKG, EXE = "rlstack_sim", "sim_bridge"
CONTROL_RATE = 60.0
STATIC_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def start_bridge(ros_processes, params_dir, **params):
    return ros_processes.start_node(PKG, EXE, params_file=params_dir / "sim_bridge.yaml", params=params)


def secs(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def yaw(q) -> float:
    return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))


def diag_values(msg: DiagnosticArray) -> dict:
    return {kv.key: kv.value for kv in msg.status[0].values}


def wait_for_diag(probe, queue, predicate, timeout=10.0, what="diagnostics"):
    """Spin until a /diagnostics message satisfies ``predicate(values)``; return its values."""
    found = {}

    def check():
        for msg in queue.pop_all():
            values = diag_values(msg)
            if predicate(values):
                found.update(values)
        return bool(found)

    probe.spin_until(check, timeout, what)
    return found


# ---------------------------------------------------------------------------- realtime, home
def test_cmd_vel_drives_home_odom_and_tf_follow_then_watchdog_stops(ros_processes, ros_probe, params_dir):
    bridge = start_bridge(ros_processes, params_dir, scene="home", mode="realtime", camera_enabled=False,
                          command_timeout_s=0.5)
    odom_q = ros_probe.subscribe("/odom", Odometry)
    tf_q = ros_probe.subscribe("/tf", TFMessage)
    diag_q = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    start = ros_probe.collect("/odom", Odometry, count=1, timeout=20)[0]
    assert start.header.frame_id == "odom" and start.child_frame_id == "base_link"
    x0 = start.pose.pose.position.x

    # Drive forward at 0.5 m/s (1 m/s^2 ramp) for 2 s of sim time, commands at ~20 Hz of wall time.
    pub = ros_probe.publisher("/cmd_vel", Twist)
    cmd = Twist()
    cmd.linear.x = 0.5
    timer = ros_probe.node.create_timer(0.05, lambda: pub.publish(cmd))
    odom_q.pop_all()
    first = {}

    def driven_for(seconds):
        def check():
            for m in odom_q.pop_all():
                if m.twist.twist.linear.x > 0.01 and "t" not in first:
                    first["t"] = secs(m.header.stamp) - m.twist.twist.linear.x / 1.0  # start of the ramp
                first["last"] = m
            return "t" in first and secs(first["last"].header.stamp) - first["t"] >= seconds
        return check

    ros_probe.spin_until(driven_for(2.0), 20, "2 s of driving on /odom")
    last = first["last"]
    t = secs(last.header.stamp) - first["t"]
    expected = 0.5 * t - 0.5 * 0.5 * 0.5 / 1.0  # minus the distance lost in the 0.5 s ramp
    dx = last.pose.pose.position.x - x0
    assert dx == pytest.approx(expected, abs=0.15), (dx, expected, t)
    assert abs(last.pose.pose.position.y) < 0.05 and abs(yaw(last.pose.pose.orientation)) < 0.05
    assert last.twist.twist.linear.x == pytest.approx(0.5, abs=0.05)

    # /tf carries the same odom -> base_link transform (same stamp as an /odom message).
    tfs = [t for m in tf_q.pop_all() for t in m.transforms if t.child_frame_id == "base_link"]
    assert tfs and tfs[-1].header.frame_id == "odom"
    assert tfs[-1].transform.translation.x > x0 + 0.3

    # Stop commanding: the watchdog (0.5 s of wall time in realtime mode) stops the base.
    ros_probe.node.destroy_timer(timer)
    odom_q.pop_all()
    stopped = {}

    def halted():
        for m in odom_q.pop_all():
            t = secs(m.header.stamp)
            stopped.setdefault("first", t)
            if m.twist.twist.linear.x > 0.45:
                stopped["last_fast"] = t
            if abs(m.twist.twist.linear.x) < 0.01:
                stopped["m"] = m
        return "m" in stopped

    ros_probe.spin_until(halted, 10, "the watchdog to stop the base")
    values = wait_for_diag(ros_probe, diag_q, lambda v: "base=timed_out" in v["watchdog"], what="watchdog state")
    assert int(values["watchdog_timeouts"]) >= 1
    # The base kept its speed for about the timeout (0.5 s from the last command), then ramped down.
    assert stopped["last_fast"] - stopped["first"] >= 0.3, stopped
    assert secs(stopped["m"].header.stamp) - stopped["last_fast"] < 1.0
    x_stop = stopped["m"].pose.pose.position.x
    later = ros_probe.wait_for_messages(odom_q, 30, timeout=10)[-1]
    assert abs(later.pose.pose.position.x - x_stop) < 0.01

    # Turning: positive angular.z turns left (REP 103).
    cmd = Twist()
    cmd.angular.z = 1.0
    timer = ros_probe.node.create_timer(0.05, lambda: pub.publish(cmd))
    yaw0 = yaw(later.pose.pose.orientation)
    ros_probe.spin_until(lambda: any(yaw(m.pose.pose.orientation) - yaw0 > 0.3 for m in odom_q.pop_all()),
                         15, "the base to turn left")
    ros_probe.node.destroy_timer(timer)

    # The step service answers false outside lockstep mode.
    reply = ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=1))
    assert not reply.success and "lockstep" in reply.message
    assert bridge.alive()


@pytest.mark.parametrize("backend", ["pybullet", "mujoco"])
def test_camera_frames_camera_info_static_tf_clock_and_ground_truth(ros_processes, ros_probe, params_dir, backend):
    """The home scene's topics, on either engine (the fetch graph runs on MuJoCo too)."""
    start_bridge(ros_processes, params_dir, scene="home", backend=backend, mode="realtime", camera_rate_hz=10.0)
    rgb_q = ros_probe.subscribe("/head_camera/image_raw", Image)
    depth_q = ros_probe.subscribe("/head_camera/depth/image_raw", Image)
    info_q = ros_probe.subscribe("/head_camera/camera_info", CameraInfo)
    static_q = ros_probe.subscribe("/tf_static", TFMessage, qos=STATIC_QOS)
    gt_q = ros_probe.subscribe("/sim_ground_truth/poses", PoseArray)
    marker_q = ros_probe.subscribe("/sim_ground_truth/markers", MarkerArray)
    clocks = ros_probe.collect("/clock", Clock, count=5, timeout=20)
    times = [ns(c.clock) for c in clocks]
    assert times == sorted(times) and times[-1] > times[0]

    for q in (rgb_q, depth_q, info_q):
        ros_probe.wait_for_messages(q, 2, timeout=20)
    rgb, depth, info = rgb_q.messages[-1], depth_q.messages[-1], info_q.messages[-1]
    assert (rgb.encoding, rgb.width, rgb.height, rgb.step) == ("rgb8", 320, 240, 320 * 3)
    assert len(rgb.data) == 320 * 240 * 3
    assert (depth.encoding, depth.width, depth.height, depth.step) == ("32FC1", 320, 240, 320 * 4)
    assert len(depth.data) == 320 * 240 * 4 and depth.is_bigendian == 0
    assert rgb.header.frame_id == depth.header.frame_id == info.header.frame_id == "head_camera_optical_frame"
    assert (info.width, info.height) == (320, 240)
    fx, cx, fy, cy = info.k[0], info.k[2], info.k[4], info.k[5]
    assert fx == pytest.approx(0.5 * 240 / math.tan(math.radians(30)), rel=1e-6) and fx == fy
    assert 150 < cx < 170 and 110 < cy < 130 and info.p[0] == fx
    import numpy as np

    d = np.frombuffer(bytes(depth.data), dtype="<f4")
    finite = d[np.isfinite(d)]
    assert finite.size > 0.5 * d.size and 0.1 <= finite.min() and finite.max() <= 12.0
    assert np.frombuffer(bytes(rgb.data), dtype=np.uint8).std() > 5  # not a blank image
    # Frames carry sim-time stamps (the same clock as /clock).
    assert abs(secs(rgb.header.stamp) - secs(clocks[-1].clock)) < 30

    # /tf_static (transient local): base_link -> head_camera_link -> head_camera_optical_frame.
    ros_probe.wait_for_messages(static_q, 1, timeout=10)
    edges = {(t.header.frame_id, t.child_frame_id) for m in static_q.messages for t in m.transforms}
    assert {("base_link", "head_camera_link"), ("head_camera_link", "head_camera_optical_frame")} <= edges
    cam = next(t for m in static_q.messages for t in m.transforms if t.child_frame_id == "head_camera_link")
    assert 0.8 < cam.transform.translation.z < 1.6  # on the mast

    poses = ros_probe.wait_for_messages(gt_q, 1, timeout=10)[0]
    markers = ros_probe.wait_for_messages(marker_q, 1, timeout=10)[0]
    assert poses.header.frame_id == "odom" and len(poses.poses) == len(markers.markers) >= 12
    assert all(m.text == m.ns and m.text for m in markers.markers)


# ---------------------------------------------------------------------------- lockstep
def test_lockstep_step_advances_exact_periods_and_reset_restores_odometry(ros_processes, ros_probe, params_dir):
    start_bridge(ros_processes, params_dir, scene="home", mode="lockstep", camera_enabled=False, seed=3)
    clock_q = ros_probe.subscribe("/clock", Clock)
    step = lambda n: ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=n))  # noqa: E731
    first = step(1)
    assert first.success and len(first.odom) == 1 and first.odom[0].header.frame_id == "odom"
    initial = first.odom[0].pose.pose
    t0 = ns(first.sim_time)
    for n in (1, 7, 60):
        reply = step(n)
        assert reply.success
        t1 = ns(reply.sim_time)
        assert t1 - t0 == round((round(t0 * CONTROL_RATE / 1e9) + n) * 1e9 / CONTROL_RATE) - t0, (n, t0, t1)
        t0 = t1
    assert t0 == round(69 * 1e9 / CONTROL_RATE)
    assert len(reply.joint_state.name) == len(reply.joint_state.position) > 0
    ros_probe.wait_for_publishers("/clock")
    step(1)
    ros_probe.spin_until(lambda: any(ns(c.clock) == round(70 * 1e9 / CONTROL_RATE) for c in clock_q.messages),
                         10, "/clock at 70 control periods")

    # Drive: commands apply to the following steps; re-sent before each call, as a lockstep
    # client does (the watchdog counts sim time here: 0.5 s = 30 control steps).
    pub = ros_probe.publisher("/cmd_vel", Twist)
    cmd = Twist()
    cmd.linear.x, cmd.angular.z = 0.6, 0.5

    def drive_and_measure():
        pub.publish(cmd)
        pose = step(10).odom[0].pose.pose
        return math.hypot(pose.position.x - initial.position.x, pose.position.y - initial.position.y) > 0.3

    ros_probe.spin_until(drive_and_measure, 20, "the base to move 0.3 m")
    odom_q = ros_probe.subscribe("/odom", Odometry)
    reply = ros_probe.call(ResetSim, "/sim_bridge/reset", ResetSim.Request(seed=3))
    assert reply.success and ns(reply.sim_time) == 0
    odom_q.pop_all()
    after = step(1).odom[0].pose.pose
    for a, b in ((after.position.x, initial.position.x), (after.position.y, initial.position.y),
                 (after.position.z, initial.position.z), (yaw(after.orientation), yaw(initial.orientation))):
        assert a == pytest.approx(b, abs=1e-9)
    bad = ros_probe.call(ResetSim, "/sim_bridge/reset", ResetSim.Request(seed=0, scene="kitchen"))
    assert not bad.success and "ball_plate" in bad.message


def test_lockstep_fast_lane_serves_steps_commands_parameters_and_timers(ros_processes, ros_probe, params_dir):
    """Lockstep spins its services and command topics on the fast lane (rlstack_common.fast_lane):
    what the executor alone used to serve still works: command topics are taken and counted,
    parameter services (``ros2 param``) answer, a scene reload (new command subscriptions) is
    picked up, and the diagnostics timer still runs."""
    from rcl_interfaces.srv import GetParameters
    from std_msgs.msg import Float64

    bridge = start_bridge(ros_processes, params_dir, scene="cartpole", mode="lockstep", camera_enabled=False)
    bridge.wait_for_output("fast lane", timeout=20)
    step = lambda n: ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=n))  # noqa: E731
    before = step(0).commands_received
    force = ros_probe.publisher("/cartpole/force", Float64)
    for i in range(1, 21):  # each command counted once (the step calls that follow it see it)
        force.publish(Float64(data=1.0))
        ros_probe.spin_until(lambda: step(1).commands_received == before + i, 5, f"command {i} counted")
    params = ros_probe.call(GetParameters, "/sim_bridge/get_parameters", GetParameters.Request(names=["scene", "mode"]))
    assert [v.string_value for v in params.values] == ["cartpole", "lockstep"]
    diag_q = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    ros_probe.wait_for_messages(diag_q, 2, timeout=10)
    # a scene reload replaces the command subscriptions: the lane serves the new ones
    assert ros_probe.call(ResetSim, "/sim_bridge/reset", ResetSim.Request(seed=1, scene="ball_plate")).success
    angles = ros_probe.publisher("/ball_plate/angles", Vector3)
    count = step(0).commands_received
    angles.publish(Vector3(x=0.01, y=0.0, z=0.0))
    ros_probe.spin_until(lambda: step(1).commands_received == count + 1, 5, "a ball_plate command counted")
    assert bridge.alive()


def test_bad_commands_are_rejected_counted_and_node_stays_up(ros_processes, ros_probe, params_dir):
    bridge = start_bridge(ros_processes, params_dir, scene="home", mode="lockstep", camera_enabled=False)
    diag_q = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    cmd_pub = ros_probe.publisher("/cmd_vel", Twist)
    joints_pub = ros_probe.publisher("/arm/joint_targets", JointState)
    ee_pub = ros_probe.publisher("/arm/ee_delta", Vector3)
    nan_twist = Twist()
    nan_twist.linear.x = math.nan
    cmd_pub.publish(nan_twist)
    joints_pub.publish(JointState(name=["panda_joint1", "panda_joint2"], position=[0.1]))
    joints_pub.publish(JointState(name=["no_such_joint"], position=[0.0]))
    joints_pub.publish(JointState(name=["panda_joint1"], position=[99.0]))
    ee_pub.publish(Vector3(x=math.inf))
    values = wait_for_diag(
        ros_probe, diag_q,
        lambda v: all(k in v for k in ("rejected.cmd_vel/non_finite", "rejected.joint_targets/wrong_length",
                                       "rejected.joint_targets/unknown_joint", "rejected.joint_targets/out_of_range",
                                       "rejected.ee_delta/non_finite")),
        timeout=15, what="rejection counters on /diagnostics")
    assert values["rejected.cmd_vel/non_finite"] == "1" and values["rejected_total"] == "5"
    # Still alive and stepping; a NaN never reached the simulator.
    reply = ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=30))
    assert reply.success and all(math.isfinite(p) for p in reply.joint_state.position)
    assert reply.odom[0].twist.twist.linear.x == pytest.approx(0.0, abs=1e-3)
    # A second burst of the same kind is counted but warned about only once per 5 s.
    cmd_pub.publish(nan_twist)
    wait_for_diag(ros_probe, diag_q, lambda v: v.get("rejected.cmd_vel/non_finite") == "2", timeout=10)
    assert bridge.log_text().count("rejected cmd_vel command (non_finite)") == 1
    assert bridge.alive()


# ---------------------------------------------------------------------------- fast mode, pause
def test_fast_mode_outruns_the_wall_clock_and_pause_stops_it(ros_processes, ros_probe, params_dir):
    import time

    from std_srvs.srv import SetBool

    start_bridge(ros_processes, params_dir, scene="cartpole", mode="fast", camera_enabled=False)
    clock_q = ros_probe.subscribe("/clock", Clock)
    ros_probe.wait_for_messages(clock_q, 1, timeout=20)
    wall0, sim0 = time.monotonic(), secs(clock_q.messages[-1].clock)
    ros_probe.spin_until(lambda: secs(clock_q.messages[-1].clock) - sim0 >= 10.0, 20, "10 s of sim time")
    assert (secs(clock_q.messages[-1].clock) - sim0) / (time.monotonic() - wall0) > 2.0
    assert ros_probe.call(SetBool, "/sim_bridge/pause", SetBool.Request(data=True)).success
    clock_q.pop_all()
    ros_probe.spin_for(0.3)  # let in-flight /clock messages arrive
    frozen = clock_q.pop_all()
    ros_probe.spin_for(0.5)  # observe that nothing more comes
    assert len(clock_q) == 0, (len(frozen), len(clock_q))
    assert ros_probe.call(SetBool, "/sim_bridge/pause", SetBool.Request(data=False)).success
    ros_probe.wait_for_messages(clock_q, 5, timeout=10)
    reply = ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=1))
    assert not reply.success and "lockstep" in reply.message


# ---------------------------------------------------------------------------- start-up
def test_unknown_scene_exits_at_start_with_valid_names(ros_processes, params_dir):
    bridge = start_bridge(ros_processes, params_dir, scene="kitchen")
    assert bridge.wait(timeout=30) == 2
    out = bridge.log_text()
    from sim_bridges import scene_names

    assert "unknown scene 'kitchen'" in out and ", ".join(sorted(scene_names())) in out
    assert "Traceback" not in out


def test_launch_file_starts_ball_plate_in_lockstep(ros_processes, ros_probe, repo):
    ros_processes.start_graph(repo / "launch" / "sim.launch.yaml",
                              {"scene": "ball_plate", "mode": "lockstep", "camera_enabled": "false"})
    reply = ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=6), timeout=30)
    assert reply.success and ns(reply.sim_time) == 100_000_000
    assert list(reply.joint_state.name) == ["plate_pitch", "plate_roll"]
    # Plate angle commands are accepted and move the plate.
    pub = ros_probe.publisher("/ball_plate/angles", Vector3)
    pub.publish(Vector3(x=0.1, y=-0.05))
    ros_probe.spin_until(
        lambda: ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=30)).joint_state.position[0] > 0.09,
        15, "the plate to tilt")
    # Reset into another scene: its topics appear, the plate's go away.
    reply = ros_probe.call(ResetSim, "/sim_bridge/reset", ResetSim.Request(seed=1, scene="cartpole"))
    assert reply.success, reply.message
    ros_probe.wait_for_subscribers("/cartpole/force")
    reply = ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=3))
    assert reply.success and ns(reply.sim_time) == 50_000_000 and len(reply.joint_state.name) == 2
    assert "plate_pitch" not in reply.joint_state.name
    ros_probe.spin_until(lambda: ros_probe.node.count_subscribers("/ball_plate/angles") == 0, 10,
                         "/ball_plate/angles to go away")


def test_tf_carries_the_arm_links(ros_processes, ros_probe, params_dir):
    """The whole robot is on /tf: the arm's chain reaches base_link, and odom -> base_link."""
    start_bridge(ros_processes, params_dir, scene="home", mode="realtime", camera_enabled=False)
    [msg] = ros_probe.collect("/tf", TFMessage, count=1, timeout=60)
    parent_of = {t.child_frame_id: t.header.frame_id for t in msg.transforms}
    assert parent_of["base_link"] == "odom"
    link, hops = "panda_hand", 0
    while link != "odom":
        link, hops = parent_of[link], hops + 1
    assert hops >= 9


def test_wall_clock_stamps_from_the_system_clock_and_publishes_no_clock(ros_processes, ros_probe, params_dir):
    """wall_clock: the bridge looks like a robot's drivers to a graph on wall-clock time (no /clock,
    stamps from the system clock); only real time keeps pace with it, so other modes are refused."""
    import time

    start_bridge(ros_processes, params_dir, scene="home", mode="realtime", camera_enabled=True,
                 camera_rate_hz=5.0, wall_clock=True)
    images = ros_probe.subscribe("/head_camera/image_raw", Image)
    [js] = ros_probe.collect("/joint_states", JointState, count=1, timeout=60)
    assert abs(secs(js.header.stamp) - time.time()) < 2.0
    ros_probe.spin_until(lambda: len(images) > 0, 30, "a camera image")
    assert abs(secs(images.pop_all()[0].header.stamp) - time.time()) < 2.0
    assert ros_probe.node.count_publishers("/clock") == 0

    refused = start_bridge(ros_processes, params_dir, scene="home", mode="lockstep", wall_clock=True)
    assert refused.wait(timeout=30) == 2
    assert "wall_clock needs mode realtime" in refused.log_text() and "Traceback" not in refused.log_text()
