"""nav_controller: the thin ROS 2 adapter around :class:`rlstack_nav.navigator.Navigator`.

Parameters, topics, the action server, timers and message conversion only: goal handling, the
control cycle, the watchdog, obstacle and depth bookkeeping and the diagnostics values live in
:class:`rlstack_nav.nav_core.NavCore` (no rclpy), frame maths in :mod:`rlstack_nav.transforms`.

Actions:    ``navigate_to`` (rlstack_interfaces/NavigateTo): feedback (state, distance_remaining),
            cancel; a new goal (action or /goal_pose) preempts the running one (it ends CANCELED,
            reason "preempted").
Subscribes: /goal_pose (geometry_msgs/PoseStamped, rviz "2D Goal Pose"), /odom (nav_msgs/Odometry),
            the depth image + camera info (obstacles), /tf_static (base_link -> camera), /tf and
            /tf_static (map -> odom, only with publish_map_to_odom false), ``~/obstacles``
            (geometry_msgs/PoseArray: obstacle points to inject, map or odom frame; an empty array
            clears all obstacles).
Publishes:  /cmd_vel (geometry_msgs/Twist), /plan (nav_msgs/Path, transient local), /map
            (nav_msgs/OccupancyGrid, transient local), ``~/obstacle_grid`` (nav_msgs/OccupancyGrid,
            transient local: the cells the sensors marked, 100, on the map's grid; re-published
            when they change, at most at diagnostics_rate_hz: in rviz, the obstacles that block a
            goal), /tf_static (map -> odom when publish_map_to_odom), /diagnostics.

Control cycles run on /odom messages (at most control_rate_hz of odometry time), so the node keeps
pace with the simulator in realtime, fast and lockstep modes. A steady-clock watchdog stops the
base (zero /cmd_vel) and aborts the goal with STALE_ODOMETRY when /odom goes quiet for
odom_timeout_s. Bad input (NaN poses, unknown frames, malformed images) is rejected, counted in
/diagnostics and logged once per kind (throttled); the node never crashes on it.
"""

from __future__ import annotations

import math
import sys
from typing import List, Optional

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

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import TF_STATIC, sensor_subscription
from rlstack_interfaces.action import NavigateTo
from rlstack_nav.map_io import MapFormatError, load_map
from rlstack_nav.nav_core import NavCore, NavOutputs
from rlstack_nav.navigator import Code, NavResult, Navigator
from rlstack_nav.parameters import PARAMS, nav_params
from rlstack_nav.transforms import stamp_s, tf_to_matrix

LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _quat(q):
    return (q.x, q.y, q.z, q.w)


class NavController(Node, NavOutputs):
    def __init__(self) -> None:
        super().__init__("nav_controller")
        values = declare_all(self, PARAMS)
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
        self.map_frame, self.odom_frame = values["map_frame"], values["odom_frame"]
        self.goal_handle = None
        self.goal_future: Optional[Future] = None
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        log = self.get_logger()
        self.core = NavCore(self.nav, values, self, self.now_steady, log.info, log.warning)

        # publishers
        self.cmd_pub = self.create_publisher(Twist, values["cmd_vel_topic"], 10)
        self.plan_pub = self.create_publisher(Path, "/plan", LATCHED)
        self.map_pub = self.create_publisher(OccupancyGridMsg, "/map", LATCHED)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.obstacle_pub = self.create_publisher(OccupancyGridMsg, "~/obstacle_grid", LATCHED)
        self._obstacle_version = -1
        self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", TF_STATIC) \
            if self.core.fixed_map_to_odom else None

        # subscriptions
        self.create_subscription(Odometry, values["odom_topic"], self.on_odom, 20)
        self.create_subscription(PoseStamped, "/goal_pose", self.on_goal_pose, 10)
        self.create_subscription(PoseArray, "~/obstacles", self.on_obstacles, 10)
        self.create_subscription(TFMessage, "/tf_static", self.on_tf_static, TF_STATIC)
        if not self.core.fixed_map_to_odom:
            self.create_subscription(TFMessage, "/tf", self.on_tf, 50)
        if values["localization_state_topic"]:
            self.create_subscription(String, values["localization_state_topic"],
                                     lambda m: self.core.set_localization_state(m.data), LATCHED)
        if values["use_depth"]:
            sensor_subscription(self, CameraInfo, values["camera_info_topic"],
                                lambda m: self.core.set_camera(m.k, m.width, m.height))
            sensor_subscription(self, Image, values["depth_topic"], self.on_depth)

        self.action = ActionServer(self, NavigateTo, "navigate_to", execute_callback=self.execute,
                                   goal_callback=lambda _goal: GoalResponse.ACCEPT,
                                   cancel_callback=lambda _handle: CancelResponse.ACCEPT)
        self.create_timer(0.05, self.core.watchdog, clock=self.steady)
        self.create_timer(1.0 / values["diagnostics_rate_hz"], self.publish_diagnostics, clock=self.steady)

        self.publish_map()
        if self.tf_static_pub is not None:
            self.publish_map_to_odom()
        self.get_logger().info(
            f"ready: map {values['map_yaml']} ({self.grid.width} x {self.grid.height} cells at "
            f"{self.grid.resolution:g} m), robot_radius {self.params.cost.robot_radius:g} m, "
            f"map -> odom {'published' if self.core.fixed_map_to_odom else 'from /tf'}; "
            f"action navigate_to, /goal_pose")

    def now_steady(self) -> float:
        return self.steady.now().nanoseconds * 1e-9

    # ------------------------------------------------------------------ static publications
    def publish_map(self) -> None:
        self.map_pub.publish(self._grid_msg(self.grid.data))

    def publish_obstacles(self) -> None:
        """``~/obstacle_grid`` when the marked cells changed since the last one."""
        layer = self.nav.obstacles
        if layer.version == self._obstacle_version:
            return
        self._obstacle_version = layer.version
        self.obstacle_pub.publish(self._grid_msg(np.where(layer.marked, 100, 0)))

    def _grid_msg(self, data: np.ndarray) -> OccupancyGridMsg:
        g = self.grid
        msg = OccupancyGridMsg()
        msg.header.frame_id = self.map_frame
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.info.resolution = float(g.resolution)
        msg.info.width, msg.info.height = g.width, g.height
        ox, oy, oyaw = g.origin
        msg.info.origin.position.x, msg.info.origin.position.y = ox, oy
        msg.info.origin.orientation.z, msg.info.origin.orientation.w = math.sin(oyaw / 2), math.cos(oyaw / 2)
        msg.data = np.asarray(data).astype(np.int8).ravel().tolist()
        return msg

    def publish_map_to_odom(self) -> None:
        x, y, yaw = self.core.map_to_odom
        t = TransformStamped()
        t.header.frame_id = self.map_frame
        t.header.stamp = self.get_clock().now().to_msg()
        t.child_frame_id = self.odom_frame
        t.transform.translation.x, t.transform.translation.y = x, y
        t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        self.tf_static_pub.publish(TFMessage(transforms=[t]))

    # ------------------------------------------------------------------ inputs
    def on_tf_static(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            try:
                matrix = tf_to_matrix(t.transform)
            except ValueError as exc:   # NaN, a zero quaternion: counted, never stored (found by fuzzing)
                self.core.reject("tf_static", f"{t.header.frame_id} -> {t.child_frame_id}: {exc}")
                continue
            self.core.static_transform(t.header.frame_id, t.child_frame_id, matrix)
            self.on_transform(t)

    def on_tf(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            self.on_transform(t)

    def on_transform(self, t) -> None:
        tr = t.transform.translation
        self.core.transform(t.header.frame_id, t.child_frame_id, tr.x, tr.y, _quat(t.transform.rotation))

    def on_odom(self, msg: Odometry) -> None:
        p = msg.pose.pose.position
        if self.core.odometry(p.x, p.y, p.z, _quat(msg.pose.pose.orientation), stamp_s(msg.header.stamp)):
            handle = self.goal_handle
            self.core.control_cycle(handle is not None, handle is not None and handle.is_cancel_requested)

    def on_goal_pose(self, msg: PoseStamped) -> None:
        self.get_logger().info("goal from /goal_pose")
        self.core.preempt("preempted by a /goal_pose goal")
        result = self.start_goal(msg, 0.0, 0.0, "/goal_pose")
        if result is not None:
            self.core.finish(result)

    def on_obstacles(self, msg: PoseArray) -> None:
        self.core.inject_obstacles(msg.header.frame_id, [(p.position.x, p.position.y) for p in msg.poses])

    def on_depth(self, msg: Image) -> None:
        self.core.depth(stamp_s(msg.header.stamp), msg.header.frame_id, msg.encoding, msg.width, msg.height,
                        msg.step, msg.is_bigendian, msg.data)

    # ------------------------------------------------------------------ goals
    def start_goal(self, pose: PoseStamped, xy_tol: float, yaw_tol: float, source: str) -> Optional[NavResult]:
        p = pose.pose.position
        return self.core.start_goal(pose.header.frame_id, p.x, p.y, _quat(pose.pose.orientation), xy_tol, yaw_tol,
                                    source)

    async def execute(self, goal_handle):
        """Action execution: start, then wait for the control loop to finish the goal."""
        self.core.preempt("preempted by a new navigate_to goal")
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
            self.core.finish(result)
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

    # ------------------------------------------------------------------ outputs (NavOutputs)
    def stop(self) -> None:
        self.cmd_pub.publish(Twist())

    def command(self, v: float, w: float) -> None:
        cmd = Twist()
        cmd.linear.x, cmd.angular.z = v, w
        self.cmd_pub.publish(cmd)

    def feedback(self, state: str, distance_remaining: float) -> None:
        fb = NavigateTo.Feedback()
        fb.state = state
        fb.distance_remaining = distance_remaining
        self.goal_handle.publish_feedback(fb)

    def goal_done(self, result: NavResult) -> None:
        fut, self.goal_future = self.goal_future, None
        if fut is not None and not fut.done():
            fut.set_result(result)

    def plan(self, empty: bool = False) -> None:
        msg = Path()
        msg.header.frame_id = self.map_frame
        msg.header.stamp = self.get_clock().now().to_msg()
        for x, y, yaw in ([] if empty else self.core.plan_poses()):
            ps = PoseStamped()
            ps.header = msg.header
            ps.pose.position.x, ps.pose.position.y = x, y
            ps.pose.orientation.z, ps.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
            msg.poses.append(ps)
        self.plan_pub.publish(msg)

    def publish_diagnostics(self) -> None:
        self.publish_obstacles()
        warn, message, kv = self.core.diagnostics()
        st = DiagnosticStatus()
        st.name = f"{self.get_name()}: navigation"
        st.hardware_id = "mobile_base"
        st.level = DiagnosticStatus.WARN if warn else DiagnosticStatus.OK
        st.message = message
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
