"""nav_controller: the thin ROS 2 adapter around :class:`rlstack_nav.navigator.Navigator`.

Actions:    ``navigate_to`` (rlstack_interfaces/NavigateTo): feedback (state, distance_remaining),
            cancel; a new goal (action or /goal_pose) preempts the running one (it ends CANCELED,
            reason "preempted").
Subscribes: /goal_pose (geometry_msgs/PoseStamped, rviz "2D Goal Pose"), /odom (nav_msgs/Odometry),
            the depth image + camera info (obstacles), /tf_static (base_link -> camera), /tf and
            /tf_static (map -> odom, only with publish_map_to_odom false), ``~/obstacles``
            (geometry_msgs/PoseArray: obstacle points to inject, map or odom frame; an empty array
            clears all obstacles).
Publishes:  /cmd_vel (geometry_msgs/Twist), /plan (nav_msgs/Path, transient local), /map
            (nav_msgs/OccupancyGrid, transient local), /tf_static (map -> odom when
            publish_map_to_odom), /diagnostics.

Control cycles run on /odom messages (at most control_rate_hz of odometry time), so the node keeps
pace with the simulator in realtime, fast and lockstep modes. A steady-clock watchdog stops the
base (zero /cmd_vel) and aborts the goal with STALE_ODOMETRY when /odom goes quiet for
odom_timeout_s. Bad input (NaN poses, unknown frames, malformed images) is rejected, counted in
/diagnostics and logged once per kind (throttled); the node never crashes on it.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseArray, PoseStamped, TransformStamped, Twist
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry, Path
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from rlstack_common import declare_parameter, run_node
from rlstack_interfaces.action import NavigateTo
from rlstack_nav.map_io import MapFormatError, load_map
from rlstack_nav.navigator import Code, NavResult, Navigator
from rlstack_nav.obstacles import CameraModel, quat_to_matrix, yaw_from_quat
from rlstack_nav.parameters import PARAMS, nav_params

LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
TF_STATIC = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
SENSOR = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2, reliability=ReliabilityPolicy.RELIABLE)


# ----------------------------------------------------------------------- small 2-D / 3-D maths
def se2_compose(a: Tuple[float, float, float], b: Tuple[float, float, float]) -> Tuple[float, float, float]:
    ax, ay, at = a
    bx, by, bt = b
    c, s = math.cos(at), math.sin(at)
    return ax + c * bx - s * by, ay + s * bx + c * by, math.atan2(math.sin(at + bt), math.cos(at + bt))


def se2_inverse(a: Tuple[float, float, float]) -> Tuple[float, float, float]:
    x, y, t = a
    c, s = math.cos(t), math.sin(t)
    return -c * x - s * y, s * x - c * y, -t


def tf_to_matrix(t) -> np.ndarray:
    m = np.eye(4)
    q = t.rotation
    m[:3, :3] = quat_to_matrix((q.x, q.y, q.z, q.w))
    m[:3, 3] = (t.translation.x, t.translation.y, t.translation.z)
    return m


def stamp_s(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


class NavController(Node):
    def __init__(self) -> None:
        super().__init__("nav_controller")
        values = {}
        for p in PARAMS:
            kw = {}
            if p.min_value is not None:
                kw = {"min_value": p.min_value, "max_value": p.max_value}
            values[p.name] = declare_parameter(self, p.name, p.default, p.help, constraints=p.constraints, **kw)
        self.cfg = values
        try:
            self.params = nav_params(values)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}")
        if not values["map_yaml"]:
            raise SystemExit("error: parameter map_yaml is empty: give the map_server YAML of the map")
        try:
            self.grid = load_map(values["map_yaml"], frame_id=values["map_frame"])
        except MapFormatError as exc:
            raise SystemExit(f"error: cannot load map: {exc}")
        self.nav = Navigator(self.grid, self.params)
        self.map_frame, self.odom_frame, self.base_frame = (values["map_frame"], values["odom_frame"],
                                                            values["base_frame"])
        self.map_to_odom: Optional[Tuple[float, float, float]] = None
        if values["publish_map_to_odom"]:
            self.map_to_odom = (values["map_to_odom_x"], values["map_to_odom_y"], values["map_to_odom_yaw"])

        # state
        self.odom_pose: Optional[Tuple[float, float, float]] = None   # base in odom
        self.odom_stamp = -math.inf
        self.odom_arrival = -math.inf                                 # steady clock
        self.odom_history: List[Tuple[float, Tuple[float, float, float]]] = []
        self.last_cycle_stamp = -math.inf
        self.last_feedback = -math.inf
        self.goal_handle = None
        self.goal_future: Optional[Future] = None
        self.goal_source = ""
        self.commanding_until = -math.inf                             # steady time; keep sending zeros
        self.static_tf: Dict[str, Tuple[str, np.ndarray]] = {}
        self.camera: Optional[CameraModel] = None
        self.last_depth_stamp = -math.inf
        self.counts: Dict[str, int] = {}
        self._last_reject_log: Dict[str, float] = {}
        self.results: Dict[str, int] = {c.name: 0 for c in Code}
        self.last_result: Optional[NavResult] = None
        self.cycle_time_ema = 0.0
        self.depth_time_ema = 0.0
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.localization_state = ""                                  # last /localization/state text
        self.lost_since: Optional[float] = None                       # steady time a goal paused (lost)
        self.lost_pauses = 0

        # publishers
        self.cmd_pub = self.create_publisher(Twist, values["cmd_vel_topic"], 10)
        self.plan_pub = self.create_publisher(Path, "/plan", LATCHED)
        self.map_pub = self.create_publisher(OccupancyGridMsg, "/map", LATCHED)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", TF_STATIC) \
            if self.map_to_odom is not None else None

        # subscriptions
        self.create_subscription(Odometry, values["odom_topic"], self.on_odom, 20)
        self.create_subscription(PoseStamped, "/goal_pose", self.on_goal_pose, 10)
        self.create_subscription(PoseArray, "~/obstacles", self.on_obstacles, 10)
        self.create_subscription(TFMessage, "/tf_static", self.on_tf_static, TF_STATIC)
        if self.map_to_odom is None:
            self.create_subscription(TFMessage, "/tf", self.on_tf, 50)
        if values["localization_state_topic"]:
            self.create_subscription(String, values["localization_state_topic"], self.on_localization_state, LATCHED)
        if values["use_depth"]:
            self.create_subscription(CameraInfo, values["camera_info_topic"], self.on_camera_info, SENSOR)
            self.create_subscription(Image, values["depth_topic"], self.on_depth, SENSOR)

        self.action = ActionServer(self, NavigateTo, "navigate_to", execute_callback=self.execute,
                                   goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                   cancel_callback=lambda _handle: CancelResponse.ACCEPT)
        self.create_timer(0.05, self.watchdog, clock=self.steady)
        self.create_timer(1.0 / values["diagnostics_rate_hz"], self.publish_diagnostics, clock=self.steady)

        self.publish_map()
        if self.tf_static_pub is not None:
            self.publish_map_to_odom()
        self.get_logger().info(
            f"ready: map {values['map_yaml']} ({self.grid.width} x {self.grid.height} cells at "
            f"{self.grid.resolution:g} m), robot_radius {self.params.cost.robot_radius:g} m, "
            f"map -> odom {'published' if self.map_to_odom is not None else 'from /tf'}; "
            f"action navigate_to, /goal_pose")

    # ------------------------------------------------------------------ bookkeeping
    def reject(self, kind: str, message: str) -> None:
        """Count bad input and log it once per kind every 5 s (own throttle: rclpy's throttled
        logging refuses different filters from one call site)."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        now = self.now_steady()
        if now - self._last_reject_log.get(kind, -math.inf) >= 5.0:
            self._last_reject_log[kind] = now
            self.get_logger().warning(f"rejected {kind}: {message} ({self.counts[kind]} so far)")

    def now_steady(self) -> float:
        return self.steady.now().nanoseconds * 1e-9

    # ------------------------------------------------------------------ static publications
    def publish_map(self) -> None:
        g = self.grid
        msg = OccupancyGridMsg()
        msg.header.frame_id = self.map_frame
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.info.resolution = float(g.resolution)
        msg.info.width, msg.info.height = g.width, g.height
        ox, oy, oyaw = g.origin
        msg.info.origin.position.x, msg.info.origin.position.y = ox, oy
        msg.info.origin.orientation.z, msg.info.origin.orientation.w = math.sin(oyaw / 2), math.cos(oyaw / 2)
        msg.data = g.data.astype(np.int8).ravel().tolist()
        self.map_pub.publish(msg)

    def publish_map_to_odom(self) -> None:
        x, y, yaw = self.map_to_odom
        t = TransformStamped()
        t.header.frame_id = self.map_frame
        t.header.stamp = self.get_clock().now().to_msg()
        t.child_frame_id = self.odom_frame
        t.transform.translation.x, t.transform.translation.y = x, y
        t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        self.tf_static_pub.publish(TFMessage(transforms=[t]))

    # ------------------------------------------------------------------ transforms
    def on_tf_static(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            self.static_tf[t.child_frame_id] = (t.header.frame_id, tf_to_matrix(t.transform))
            self._maybe_map_to_odom(t)

    def on_tf(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            self._maybe_map_to_odom(t)

    def _maybe_map_to_odom(self, t) -> None:
        if self.tf_static_pub is None and t.header.frame_id == self.map_frame and t.child_frame_id == self.odom_frame:
            q = t.transform.rotation
            self.map_to_odom = (t.transform.translation.x, t.transform.translation.y,
                                yaw_from_quat((q.x, q.y, q.z, q.w)))

    def on_localization_state(self, msg: String) -> None:
        was = self.localization_lost
        self.localization_state = msg.data
        if self.localization_lost != was:   # two call sites: rclpy refuses one call site at two severities
            if self.localization_lost:
                self.get_logger().warning(f"localisation: {msg.data}; goals refused / paused")
            else:
                self.get_logger().info(f"localisation: {msg.data}; goals resume")

    @property
    def localization_lost(self) -> bool:
        return self.localization_state.startswith("LOST")

    def chain(self, frame: str) -> Optional[np.ndarray]:
        """base_frame -> ``frame`` from the static transforms (None if not connected)."""
        m = np.eye(4)
        seen = 0
        while frame != self.base_frame:
            link = self.static_tf.get(frame)
            if link is None or seen > 20:
                return None
            parent, t = link
            m = t @ m
            frame = parent
            seen += 1
        return m

    def map_pose(self, odom_pose) -> Optional[Tuple[float, float, float]]:
        if self.map_to_odom is None or odom_pose is None:
            return None
        return se2_compose(self.map_to_odom, odom_pose)

    def odom_at(self, stamp: float):
        if not self.odom_history:
            return None
        best = min(self.odom_history, key=lambda e: abs(e[0] - stamp))
        return best[1]

    # ------------------------------------------------------------------ inputs
    def on_odom(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        vals = (p.x, p.y, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in vals) or (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w) < 1e-6:
            self.reject("odometry", "non-finite or zero-quaternion pose")
            return
        stamp = stamp_s(msg.header.stamp)
        if stamp < self.odom_stamp - 1.0:  # time went back (simulation reset): start over
            self.odom_history.clear()
            self.last_cycle_stamp = -math.inf
            self.nav._last_t = None
        self.odom_pose = (p.x, p.y, yaw_from_quat((q.x, q.y, q.z, q.w)))
        self._base_z = p.z if math.isfinite(p.z) else 0.0
        self.odom_stamp = stamp
        self.odom_arrival = self.now_steady()
        self.odom_history.append((stamp, self.odom_pose))
        if len(self.odom_history) > 120:
            del self.odom_history[:-60]
        period = 1.0 / self.cfg["control_rate_hz"]
        if self.nav.active and stamp - self.last_cycle_stamp >= period * 0.999:
            self.last_cycle_stamp = stamp
            self.control_cycle()

    def on_goal_pose(self, msg: PoseStamped) -> None:
        self.get_logger().info("goal from /goal_pose")
        self.preempt("preempted by a /goal_pose goal")
        result = self.start_goal(msg, 0.0, 0.0, "/goal_pose")
        if result is not None:
            self.finish(result)

    def on_obstacles(self, msg: PoseArray) -> None:
        if not msg.poses:
            self.nav.obstacles.clear()
            self.get_logger().info("obstacles cleared (empty ~/obstacles message)")
            return
        frame = msg.header.frame_id or self.map_frame
        pts = []
        for pose in msg.poses:
            xy = (pose.position.x, pose.position.y)
            if not all(math.isfinite(v) for v in xy):
                self.reject("obstacle", "non-finite point")
                continue
            if frame == self.odom_frame:
                if self.map_to_odom is None:
                    self.reject("obstacle", "odom frame before map -> odom is known")
                    return
                xy = se2_compose(self.map_to_odom, (xy[0], xy[1], 0.0))[:2]
            elif frame != self.map_frame:
                self.reject("obstacle", f"unknown frame '{frame}' (use {self.map_frame} or {self.odom_frame})")
                return
            pts.append(xy)
        new = self.nav.obstacles.add_points(np.array(pts).reshape(-1, 2), self.odom_stamp if math.isfinite(
            self.odom_stamp) else 0.0)
        self.get_logger().info(f"{len(pts)} injected obstacle point(s), {new} new cell(s)")

    def on_camera_info(self, msg: CameraInfo) -> None:
        k = msg.k
        if k[0] <= 0 or k[4] <= 0:
            self.reject("camera_info", "non-positive focal length")
            return
        self.camera = CameraModel(k[0], k[4], k[2], k[5], msg.width, msg.height)

    def on_depth(self, msg: Image) -> None:
        stamp = stamp_s(msg.header.stamp)
        if stamp - self.last_depth_stamp < 1.0 / self.cfg["depth_rate_hz"] and stamp >= self.last_depth_stamp:
            return
        if self.camera is None or self.map_to_odom is None or not self.odom_history:
            return
        if msg.encoding != "32FC1":
            self.reject("depth", f"encoding {msg.encoding} (need 32FC1)")
            return
        if msg.step < msg.width * 4 or len(msg.data) < msg.step * msg.height:
            self.reject("depth", "image data shorter than width x height")
            return
        base_cam = self.chain(msg.header.frame_id)
        if base_cam is None:
            self.reject("depth", f"no static transform {self.base_frame} -> {msg.header.frame_id} yet")
            return
        t0 = time.perf_counter()
        self.last_depth_stamp = stamp
        dtype = np.dtype(">f4") if msg.is_bigendian else np.dtype("<f4")
        rows = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)
        depth = rows[:, :msg.width * 4].copy().view(dtype).reshape(msg.height, msg.width).astype(np.float32)
        odom_pose = self.odom_at(stamp)
        bx, by, byaw = self.map_pose(odom_pose)
        # the base is planar (z = wheel radius in odom is folded into the static chain's z)
        map_base = np.eye(4)
        map_base[:3, :3] = quat_to_matrix((0.0, 0.0, math.sin(byaw / 2), math.cos(byaw / 2)))
        map_base[:3, 3] = (bx, by, self.base_height)
        m = map_base @ base_cam
        self.nav.obstacles.update_from_depth(depth, self.camera, m[:3, :3], m[:3, 3], (bx, by), stamp)
        self.depth_time_ema = 0.9 * self.depth_time_ema + 0.1 * (time.perf_counter() - t0)

    @property
    def base_height(self) -> float:
        """Height of base_frame above the floor: taken from the latest odometry z if any."""
        return getattr(self, "_base_z", 0.0)

    # ------------------------------------------------------------------ goals
    def goal_in_map(self, pose: PoseStamped) -> Tuple[Optional[Tuple[float, float, float]], str]:
        p, q = pose.pose.position, pose.pose.orientation
        vals = (p.x, p.y, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in vals):
            return None, "goal pose is not finite"
        if q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w < 1e-6:
            return None, "goal orientation is a zero quaternion"
        yaw = yaw_from_quat((q.x, q.y, q.z, q.w))
        frame = pose.header.frame_id or self.map_frame
        if frame == self.map_frame:
            return (p.x, p.y, yaw), ""
        if frame == self.odom_frame:
            if self.map_to_odom is None:
                return None, f"goal in {self.odom_frame} but map -> odom is not known yet"
            return se2_compose(self.map_to_odom, (p.x, p.y, yaw)), ""
        return None, f"unknown goal frame '{frame}' (use {self.map_frame} or {self.odom_frame})"

    def start_goal(self, pose: PoseStamped, xy_tol: float, yaw_tol: float, source: str) -> Optional[NavResult]:
        goal, why = self.goal_in_map(pose)
        if goal is None:
            self.reject("goal", why)
            return NavResult(Code.INVALID_GOAL, why)
        if self.localization_lost:
            why = f"localisation lost ({self.localization_state}); give the localiser an initial pose"
            self.reject("goal_localization_lost", why)
            return NavResult(Code.LOCALIZATION_LOST, f"cannot start: {why}")
        age = self.now_steady() - self.odom_arrival
        robot = self.map_pose(self.odom_pose)
        if robot is None or age > self.cfg["odom_timeout_s"]:
            what = "no odometry received" if self.odom_pose is None else f"odometry is {age:.1f} s old"
            if self.odom_pose is not None and robot is None:
                what = "map -> odom transform not known (publish_map_to_odom false and nothing on /tf)"
            return NavResult(Code.STALE_ODOMETRY, f"cannot start: {what} on {self.cfg['odom_topic']}")
        self.goal_source = source
        result = self.nav.set_goal(goal, robot, self.odom_stamp, float(xy_tol), float(yaw_tol))
        if result is None:
            self.publish_plan()
            self.commanding_until = self.now_steady() + 5.0
            self.last_cycle_stamp = -math.inf
            self.get_logger().info(
                f"goal ({goal[0]:.2f}, {goal[1]:.2f}, {goal[2]:.2f}) from {source}: path "
                f"{self.nav.last_plan.length:.2f} m, planned in {1000 * self.nav.last_plan.time_s:.0f} ms")
        return result

    def preempt(self, reason: str) -> None:
        if self.nav.active:
            self.finish(self.nav.cancel(self.map_pose(self.odom_pose), reason))

    def finish(self, result: NavResult) -> None:
        """A goal ended (or was refused): stop, publish, and complete the action if there is one."""
        self.results[result.code.name] += 1
        self.last_result = result
        self.cmd_pub.publish(Twist())
        self.publish_plan(empty=True)
        # two call sites: rclpy refuses one call site logging at two severities (it raised here)
        text = (f"goal {result.code.name}: {result.reason} (distance {result.final_distance:.3f} m, "
                f"yaw error {result.final_yaw_error:.3f} rad)")
        if result.code == Code.SUCCEEDED:
            self.get_logger().info(text)
        else:
            self.get_logger().warning(text)
        fut, self.goal_future = self.goal_future, None
        if fut is not None and not fut.done():
            fut.set_result(result)

    async def execute(self, goal_handle):
        """Action execution: start, then wait for the control loop to finish the goal."""
        self.preempt("preempted by a new navigate_to goal")
        req = goal_handle.request
        fut = Future()
        result = self.start_goal(req.pose, req.position_tolerance, req.yaw_tolerance, "navigate_to")
        if result is None:
            self.goal_handle = goal_handle
            self.goal_future = fut
            result = await fut
            if self.goal_handle is goal_handle:
                self.goal_handle = None
        else:
            self.finish(result)
        out = NavigateTo.Result()
        out.code = int(result.code)
        out.reason = result.reason
        out.final_distance = float(result.final_distance) if math.isfinite(result.final_distance) else float("nan")
        out.final_yaw_error = float(result.final_yaw_error) if math.isfinite(result.final_yaw_error) else float("nan")
        if result.code == Code.SUCCEEDED:
            goal_handle.succeed()
        elif result.code == Code.CANCELED and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return out

    # ------------------------------------------------------------------ control
    def control_cycle(self) -> None:
        robot = self.map_pose(self.odom_pose)
        handle = self.goal_handle
        if handle is not None and handle.is_cancel_requested:
            self.finish(self.nav.cancel(robot, "canceled on request"))
            return
        if self.localization_lost:   # pause: stop and wait for the localiser (or give up after the timeout)
            self.pause_for_localization(robot, handle)
            return
        if self.lost_since is not None:
            self.get_logger().info(f"localisation back after {self.now_steady() - self.lost_since:.1f} s: goal resumes")
            self.lost_since = None
        t0 = time.perf_counter()
        step = self.nav.step(robot, self.odom_stamp)
        self.cycle_time_ema = 0.9 * self.cycle_time_ema + 0.1 * (time.perf_counter() - t0)
        if step.path_changed:
            self.publish_plan()
        if step.result is not None:
            self.finish(step.result)
            return
        cmd = Twist()
        cmd.linear.x, cmd.angular.z = float(step.v), float(step.w)
        self.cmd_pub.publish(cmd)
        self.commanding_until = self.now_steady() + 5.0
        if handle is not None and self.odom_stamp - self.last_feedback >= 1.0 / self.cfg["feedback_rate_hz"]:
            self.last_feedback = self.odom_stamp
            fb = NavigateTo.Feedback()
            fb.state = step.state
            fb.distance_remaining = float(step.distance_remaining)
            handle.publish_feedback(fb)

    def pause_for_localization(self, robot, handle) -> None:
        now = self.now_steady()
        if self.lost_since is None:
            self.lost_since = now
            self.lost_pauses += 1
            self.get_logger().warning(f"goal paused: localisation lost ({self.localization_state})")
        self.cmd_pub.publish(Twist())
        timeout = self.cfg["localization_lost_timeout_s"]
        if now - self.lost_since > timeout:
            self.lost_since = None
            self.finish(self.nav.abort(Code.LOCALIZATION_LOST,
                                       f"localisation lost for more than localization_lost_timeout_s {timeout:g} s "
                                       f"({self.localization_state}): base stopped", robot))
            return
        if handle is not None and self.odom_stamp - self.last_feedback >= 1.0 / self.cfg["feedback_rate_hz"]:
            self.last_feedback = self.odom_stamp
            fb = NavigateTo.Feedback()
            fb.state = "LOCALIZATION_LOST"
            fb.distance_remaining = float("nan")
            handle.publish_feedback(fb)

    def watchdog(self) -> None:
        now = self.now_steady()
        age = now - self.odom_arrival
        if age <= self.cfg["odom_timeout_s"]:
            # a goal waiting in REPLANNING with no odometry change still needs its cycles: odometry drives them
            return
        if self.nav.active:
            what = "never received" if self.odom_pose is None else f"none for {age:.2f} s"
            self.finish(self.nav.abort(Code.STALE_ODOMETRY,
                                       f"odometry on {self.cfg['odom_topic']} is stale ({what}; odom_timeout_s "
                                       f"{self.cfg['odom_timeout_s']:g} s): base stopped",
                                       self.map_pose(self.odom_pose)))
        if now < self.commanding_until:
            self.cmd_pub.publish(Twist())  # keep the base stopped while odometry is stale

    def publish_plan(self, empty: bool = False) -> None:
        msg = Path()
        msg.header.frame_id = self.map_frame
        msg.header.stamp = self.get_clock().now().to_msg()
        path = self.nav.path
        if not empty and len(path):
            headings = np.arctan2(np.diff(path[:, 1]), np.diff(path[:, 0])) if len(path) > 1 else np.zeros(0)
            goal_yaw = self.nav.goal[2] if self.nav.goal is not None else 0.0
            headings = np.append(headings, goal_yaw)
            for (x, y), yaw in zip(path, headings):
                ps = PoseStamped()
                ps.header = msg.header
                ps.pose.position.x, ps.pose.position.y = float(x), float(y)
                ps.pose.orientation.z, ps.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
                msg.poses.append(ps)
        self.plan_pub.publish(msg)

    def publish_diagnostics(self) -> None:
        age = self.now_steady() - self.odom_arrival
        st = DiagnosticStatus()
        st.name = f"{self.get_name()}: navigation"
        st.hardware_id = "mobile_base"
        stale = age > self.cfg["odom_timeout_s"]
        st.level = DiagnosticStatus.WARN if stale or self.localization_lost else DiagnosticStatus.OK
        st.message = ("odometry stale" if stale else "localisation lost: goals paused" if self.localization_lost
                      else "ok") + (
            f"; last goal {self.last_result.code.name}: {self.last_result.reason}" if self.last_result else "")
        kv = {
            "state": self.nav.state if self.nav.active else "IDLE",
            "odometry_age_s": f"{age:.3f}" if math.isfinite(age) else "never",
            "obstacle_cells": str(self.nav.obstacles.count()),
            "plans": str(self.nav.plans),
            "last_plan_ms": f"{1000 * self.nav.last_plan.time_s:.1f}" if self.nav.last_plan else "-",
            "controller_cycle_ms": f"{1000 * self.cycle_time_ema:.2f}",
            "depth_update_ms": f"{1000 * self.depth_time_ema:.1f}",
            "localization": self.localization_state or "-",
            "localization_pauses": str(self.lost_pauses),
        }
        kv.update({f"results_{k.lower()}": str(v) for k, v in self.results.items()})
        kv.update({f"rejected_{k}": str(v) for k, v in self.counts.items()})
        st.values = [KeyValue(key=k, value=v) for k, v in kv.items()]
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [st]
        self.diag_pub.publish(msg)


def main(args: Optional[List[str]] = None) -> int:
    try:
        return run_node(NavController, args)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
