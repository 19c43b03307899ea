"""``mission``: the fetch mission node (action ``/fetch``, rlstack_interfaces/action/Fetch).

A thin adapter: :class:`rlstack_mission.fetch.FetchMission` decides; this node gives it the
robot through ROS (:class:`rlstack_mission.ros_ports.RosPorts`, which sees the node only as a
:class:`rlstack_mission.host.MissionHost`). Its parameters are the table
``rlstack_mission.parameters.MISSION``; ``rlstack_mission.status`` keeps /mission/status and
/diagnostics, ``rlstack_mission.grasp_target`` publishes the held grasp target.

Calls       /semantic_map/query (rlstack_interfaces/srv/QueryObjects)
            /navigate_to (rlstack_interfaces/action/NavigateTo)
            /<policy_node>/change_state, get_state (lifecycle_msgs): the lift controller
Subscribes  /odom, /map (latched), /nav_controller/obstacle_grid (latched: what navigation's
            sensors mark, for staging poses around objects on the floor), /tf, /tf_static, /joint_states,
            /grasp_target (grasp_target_source: topic only: whether the other node answered)
Publishes   /grasp_target (geometry_msgs/PoseStamped in base_link, twice the control rate (40 Hz) while a
            target is set: see below; not with grasp_target_source: topic),
            /fetch/grasp_request (geometry_msgs/PointStamped in map, grasp_target_source: topic only:
            the object a grasp is for; an empty frame_id when the grasp ends),
            /fetch/dropoff (PoseStamped, latched), ``cmd_vel_topic`` (default /cmd_vel; the short straight
            docking moves only), /arm/ee_delta + /arm/gripper (carry pose, recovery, drop), /diagnostics,
            /nav_controller/obstacles (geometry_msgs/PoseArray: an empty one, when no stand pose at
            the drop-off is reached, makes navigation forget its sensed obstacles; drop_clear_obstacles)

Grasp target: the lift policy reads the object's pose in ``base_link`` on /grasp_target.
``grasp_target_source: perception`` (robot mode, the default): the grasp_pose service estimates
it once after docking, with the arm out of the camera's view, in ``odom`` at the image's time; it
is held there and republished in the current ``base_link``; the lift and the release are judged
from the fingers and the grasp point. ``topic``: another node publishes /grasp_target for the
point the mission names on /fetch/grasp_request; the lift and release are judged as in robot mode.
The labelled ground-truth ablation (``launch/fetch.launch.yaml robot_mode:=false``) is ``topic``
with the simulator-side ``rlstack_sim ground_truth_grasp_target`` node answering: this node never
reads the simulator's truth. See docs/reference/mission.md.

The action runs in its own thread (MultiThreadedExecutor, reentrant callbacks): the mission is
a sequence of blocking steps, while topics and service replies keep arriving. /odom, /tf,
/tf_static and /joint_states are taken by a hidden node of their own, ``_<name>_state``
(``_mission_state``), in a thread of its own (rlstack_common.fast_lane.SubscriptionLane): at
60 Hz a topic through the executor they cost the node most of its CPU.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import List, Optional, Tuple

import numpy as np
from geometry_msgs.msg import PointStamped, PoseArray, PoseStamped, Twist, Vector3
from lifecycle_msgs.srv import ChangeState, GetState
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64
from tf2_msgs.msg import TFMessage

from rlstack_common import run_node
from rlstack_common.fast_lane import SubscriptionLane
from rlstack_common.param_table import Values, declare_all
from rlstack_common.qos import TF_STATIC
from rlstack_interfaces.action import Fetch, NavigateTo
from rlstack_interfaces.srv import EstimateGraspPose, QueryObjects

from .fetch import PHASES, STEPS, FetchCode, FetchMission, FetchResult, MissionAborted
from .frames import TfTree, yaw_of
from .grasp_target import HeldTargetPublisher
from .parameters import MISSION, configure
from .ros_ports import RosPorts
from .status import MissionStatus

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")


class MissionNode(Node):
    """The /fetch action server; implements :class:`rlstack_mission.host.MissionHost` for :class:`RosPorts`."""

    def __init__(self) -> None:
        super().__init__("mission")
        self._apply(declare_all(self, MISSION))
        self.group = ReentrantCallbackGroup()
        g = dict(callback_group=self.group)
        self.tf = TfTree()
        self.odom: Optional[Tuple[float, float, float, float, float]] = None  # x, y, z, yaw, stamp
        self.grid: Optional[OccupancyGrid] = None
        self.obstacle_grid: Optional[OccupancyGrid] = None
        self.finger_pair: Tuple[float, ...] = ()   # the two finger joints, m (() until /joint_states)
        self.last_topic_target = -math.inf   # monotonic time of the last /grasp_target (topic source)
        self.topic_target: Optional[PoseStamped] = None   # the last /grasp_target (topic source)
        self._target_out: Optional[HeldTargetPublisher] = None   # /grasp_target (perception source)
        self.held_target: Optional[Tuple[np.ndarray, np.ndarray]] = None   # held in odom through a grasp
        self.goal_handle = None
        self.stopping = threading.Event()   # set on SIGINT/SIGTERM: a running fetch ends, robot safe
        self.executing = threading.Event()  # an execute callback is running (until its result is set)
        self.status = MissionStatus(self, LATCHED)   # ~/status, /diagnostics, rejected input

        # The robot's state at 60 Hz a topic: taken in a thread of its own (a hidden node
        # ``_<name>_state``), not through this node's multi-threaded executor, whose every wake-up
        # rebuilds the wait set of all the node's entities in Python (rlstack_common.fast_lane)
        self.state_lane = SubscriptionLane(self, "state")
        self.state_lane.subscribe(Odometry, "/odom", self._on_odom, 20)
        self.state_lane.subscribe(TFMessage, "/tf", lambda m: self.tf.update(m, static=False), 100)
        self.state_lane.subscribe(TFMessage, "/tf_static", lambda m: self.tf.update(m, static=True), TF_STATIC)
        self.state_lane.subscribe(JointState, "/joint_states", self._on_joints, 20)
        self.state_lane.start()
        self.create_subscription(OccupancyGrid, "/map", self._on_map, LATCHED, **g)
        self.create_subscription(OccupancyGrid, "/nav_controller/obstacle_grid", self._on_obstacle_grid, LATCHED, **g)
        self.request_pub = None
        if self.grasp_source == "topic":
            self.create_subscription(PoseStamped, "/grasp_target", self._on_topic_target, 10, **g)
            self.request_pub = self.create_publisher(PointStamped, "/fetch/grasp_request", LATCHED)
        else:
            self._target_out = HeldTargetPublisher(self, self.tf, self.rate_hz, self.group)
        self.dropoff_pub = self.create_publisher(PoseStamped, "/fetch/dropoff", LATCHED)
        self.cmd_pub = self.create_publisher(Twist, self.cmd_vel_topic, 10)
        self.ee_pub = self.create_publisher(Vector3, "/arm/ee_delta", 10)
        self.gripper_pub = self.create_publisher(Bool, "/arm/gripper", 10)
        self.ee_yaw_pub = self.create_publisher(Float64, "/arm/ee_yaw", 10)
        self.obstacles_pub = self.create_publisher(PoseArray, "/nav_controller/obstacles", 10)

        self.query_client = self.create_client(QueryObjects, "/semantic_map/query", **g)
        self.grasp_pose_client = (self.create_client(EstimateGraspPose, self.grasp_pose_service, **g)
                                  if self.grasp_source == "perception" else None)
        self.nav_client = ActionClient(self, NavigateTo, "/navigate_to", **g)
        self.change_state = self.create_client(ChangeState, f"{self.policy_node}/change_state", **g)
        self.get_state = self.create_client(GetState, f"{self.policy_node}/get_state", **g)
        self.action = ActionServer(self, Fetch, "fetch", execute_callback=self._execute,
                                   goal_callback=self._on_goal, cancel_callback=lambda _h: CancelResponse.ACCEPT, **g)
        if self.action_introspection != "off":
            # the action's goal/result/cancel exchanges on /fetch/_action/*/_service_event, as
            # `ros2 bag record` records an action (the demo's MCAP holds the results this way)
            from rclpy.qos import qos_profile_services_default
            from rclpy.service_introspection import ServiceIntrospectionState

            state = getattr(ServiceIntrospectionState, self.action_introspection.upper())
            self.action.configure_introspection(self.get_clock(), qos_profile_services_default, state)
        self.create_timer(1.0, self.status.publish_diagnostics, **g)
        self.status.publish()
        self.get_logger().info(f"ready: action /fetch; {len(self.params_.explore_waypoints)} exploration waypoints; "
                               f"lift controller {self.policy_node}; grasp target from {self.grasp_source}")

    def _apply(self, values: Values) -> None:
        """Take the parameters' values (declared at start; read again before each fetch): the core's
        FetchParams and the node's settings (``rlstack_mission.parameters.configure``; ValueError: invalid)."""
        self.params_, settings = configure(values)
        for name, value in settings.items():
            setattr(self, name, value)

    def _reconfigure(self) -> None:
        """Read the parameters again: values set at run time apply from the next fetch."""
        self._apply(Values({p.name: self.get_parameter(p.name).value for p in MISSION}))

    # ------------------------------------------------------------------ inputs
    def _on_odom(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        values = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in values) or q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w < 1e-12:
            self.status.reject("odom", "non_finite", "pose is not finite or has a zero quaternion")
            return
        self.odom = (p.x, p.y, p.z, yaw_of((q.x, q.y, q.z, q.w)), time.monotonic())

    def _grid_ok(self, msg: OccupancyGrid, what: str) -> bool:
        info = msg.info
        cells = int(info.width) * int(info.height)
        origin = info.origin.position
        if not (math.isfinite(info.resolution) and info.resolution > 0) or not all(
                math.isfinite(v) for v in (origin.x, origin.y, origin.z)):
            self.status.reject(what, "bad_geometry",
                               f"resolution {info.resolution}, origin ({origin.x}, {origin.y})")
            return False
        if cells == 0 or cells != len(msg.data):
            self.status.reject(what, "size_mismatch",
                               f"{info.width} x {info.height} cells but {len(msg.data)} values")
            return False
        return True

    def _on_map(self, msg: OccupancyGrid) -> None:
        if self._grid_ok(msg, "map"):
            self.grid = msg

    def _on_obstacle_grid(self, msg: OccupancyGrid) -> None:
        if self._grid_ok(msg, "obstacle_grid"):
            self.obstacle_grid = msg

    def _on_joints(self, msg: JointState) -> None:
        idx = [i for i, n in enumerate(msg.name) if n in FINGERS]
        if len(msg.position) != len(msg.name):
            self.status.reject("joint_states", "length_mismatch",
                               f"{len(msg.name)} names, {len(msg.position)} positions")
            return
        if len(idx) == 2:
            pair = tuple(float(msg.position[i]) for i in idx)
            if not all(math.isfinite(v) for v in pair):
                self.status.reject("joint_states", "non_finite", f"finger positions {pair}")
                return
            self.finger_pair = pair

    @property
    def fingers(self) -> Optional[float]:
        """Gripper opening (sum of the two finger joints), m; None until /joint_states arrives."""
        return sum(self.finger_pair) if self.finger_pair else None

    @property
    def holding(self) -> bool:
        """The fingers closed on something (wider than ``min_finger_width``)."""
        width = self.fingers
        return width is not None and width > self.min_finger_width

    def _on_topic_target(self, msg: PoseStamped) -> None:
        self.topic_target = msg
        self.last_topic_target = time.monotonic()

    # ------------------------------------------------------------------ outputs
    @property
    def held_target(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """The grasp target estimated before a lift, held in ``odom`` (None: none held); published on
        /grasp_target in the current base_link while held (perception source)."""
        return self._held_target

    @held_target.setter
    def held_target(self, value: Optional[Tuple[np.ndarray, np.ndarray]]) -> None:
        self._held_target = value
        if self._target_out is not None:
            self._target_out.hold(value, self.odom_frame, self.base_frame)

    # ------------------------------------------------------------------ shutdown (rlstack_common.run_node)
    def destroy_node(self) -> None:
        self.state_lane.destroy()
        super().destroy_node()

    def request_shutdown(self) -> None:
        """SIGINT/SIGTERM: a running fetch ends at its next check (base stopped, controller deactivated)."""
        self.stopping.set()

    def shutdown_pending(self) -> bool:
        return self.executing.is_set()

    # ------------------------------------------------------------------ the action
    def _on_goal(self, goal) -> GoalResponse:
        if self.stopping.is_set():
            return GoalResponse.REJECT
        if self.goal_handle is not None:
            self.get_logger().warning("rejecting a fetch goal: a fetch is running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _execute(self, goal_handle) -> Fetch.Result:
        self.executing.set()
        try:
            return self._run_fetch(goal_handle)
        finally:
            self.executing.clear()

    def _run_fetch(self, goal_handle) -> Fetch.Result:
        self.goal_handle = goal_handle
        req = goal_handle.request
        try:  # parameters set since the last fetch apply from this one on
            self._reconfigure()
        except ValueError as exc:
            self.goal_handle = None
            goal_handle.abort()
            return Fetch.Result(code=int(FetchCode.ERROR), reason=f"invalid parameters: {exc}")
        self.status.values.update(missions=self.status.values["missions"] + 1, query=req.query)
        ports = RosPorts(self, goal_handle)
        try:
            dropoff = ports.dropoff_in_map(req.dropoff)
            self.dropoff_pub.publish(req.dropoff)
            mission = FetchMission(ports, self.params_, self.robot_radius)
            result = mission.run(req.query, dropoff)
        except MissionAborted as exc:  # bad drop-off frame etc.
            result = FetchResult(exc.code, exc.reason)
        except Exception as exc:  # never leave the robot moving on a bug
            self.get_logger().error(f"fetch failed with an internal error: {exc!r}")
            result = FetchResult(FetchCode.ERROR, f"internal error: {exc!r}")
        finally:
            ports.stop_all()
            self.goal_handle = None
        out = Fetch.Result(code=int(result.code), reason=result.reason)
        names = [p for p in PHASES if p in result.phase_durations]
        out.phase_names = names
        out.phase_durations = [float(result.phase_durations[p]) for p in names]
        steps = [s for s in STEPS if s in result.step_durations]
        out.step_names, out.step_durations = steps, [float(result.step_durations[s]) for s in steps]
        self.status.values.update(phase="IDLE", detail=f"{result.code.name}: {result.reason}",
                                  last_result=result.code.name, grasp_attempts=result.grasp_attempts,
                                  target=None if result.target is None else result.target.label)
        if result.code == FetchCode.SUCCEEDED:
            self.status.values["succeeded"] += 1
        self.status.publish()
        self.get_logger().info(f"fetch '{req.query}': {result.code.name}: {result.reason}")
        if result.code == FetchCode.SUCCEEDED:
            goal_handle.succeed()
        elif result.code == FetchCode.CANCELED and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return out


def main(args: Optional[List[str]] = None) -> int:
    try:
        return run_node(MissionNode, args, executor_factory=lambda: MultiThreadedExecutor(num_threads=4))
    except ValueError as exc:  # an invalid parameter combination found while configuring
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
