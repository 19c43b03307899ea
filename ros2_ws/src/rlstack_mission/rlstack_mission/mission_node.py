"""``mission``: the fetch mission node (action ``/fetch``, rlstack_interfaces/action/Fetch).

A thin adapter: :class:`rlstack_mission.fetch.FetchMission` decides; this node gives it the
robot through ROS (:class:`rlstack_mission.ros_ports.RosPorts`):

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
            docking moves only), /arm/ee_delta + /arm/gripper (carry pose, recovery, drop), /diagnostics

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
a sequence of blocking steps, while topics and service replies keep arriving.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PointStamped, PoseStamped, Twist, Vector3
from lifecycle_msgs.srv import ChangeState, GetState
from nav_msgs.msg import OccupancyGrid, Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, String
from tf2_msgs.msg import TFMessage

from rlstack_common import declare_parameter, run_node
from rlstack_common.qos import TF_STATIC
from rlstack_interfaces.action import Fetch, NavigateTo
from rlstack_interfaces.srv import EstimateGraspPose, QueryObjects

from .fetch import PHASES, STEPS, FetchCode, FetchMission, FetchParams, MissionAborted
from .frames import TfTree, yaw_of, to_frame
from .ros_ports import RosPorts

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")


class MissionNode(Node):
    def __init__(self) -> None:
        super().__init__("mission")
        self._configure(lambda *a, **k: declare_parameter(self, *a, **k))
        self.group = ReentrantCallbackGroup()
        g = dict(callback_group=self.group)
        self.lock = threading.Lock()
        self.tf = TfTree()
        self.odom: Optional[Tuple[float, float, float, float, float]] = None  # x, y, z, yaw, stamp
        self.grid: Optional[OccupancyGrid] = None
        self.obstacle_grid: Optional[OccupancyGrid] = None
        self.finger_pair: Tuple[float, ...] = ()   # the two finger joints, m (() until /joint_states)
        self.last_topic_target = -math.inf   # monotonic time of the last /grasp_target (topic source)
        self.topic_target: Optional[PoseStamped] = None   # the last /grasp_target (topic source)
        # the grasp target, held in odom through the grasp (set when a grasp starts, cleared after)
        self._target_timer = None   # /grasp_target's timer: runs only while a target is held
        self.held_target: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self.goal_handle = None
        self.stopping = threading.Event()   # set on SIGINT/SIGTERM: a running fetch ends, robot safe
        self.executing = threading.Event()  # an execute callback is running (until its result is set)
        self.status: Dict[str, Any] = {"phase": "IDLE", "detail": "", "missions": 0, "succeeded": 0}
        self.rejected: Dict[str, int] = {}         # bad input by "<input>.<kind>" (/diagnostics)
        self._last_reject_log: Dict[str, float] = {}

        self.create_subscription(Odometry, "/odom", self._on_odom, 20, **g)
        self.create_subscription(OccupancyGrid, "/map", self._on_map, LATCHED, **g)
        self.create_subscription(OccupancyGrid, "/nav_controller/obstacle_grid", self._on_obstacle_grid, LATCHED, **g)
        self.create_subscription(TFMessage, "/tf", lambda m: self.tf.update(m, static=False), 100, **g)
        self.create_subscription(TFMessage, "/tf_static", lambda m: self.tf.update(m, static=True), TF_STATIC, **g)
        self.create_subscription(JointState, "/joint_states", self._on_joints, 20, **g)
        if self.grasp_source == "topic":
            self.create_subscription(PoseStamped, "/grasp_target", self._on_topic_target, 10, **g)
            self.request_pub = self.create_publisher(PointStamped, "/fetch/grasp_request", LATCHED)
        else:
            self.target_pub = self.create_publisher(PoseStamped, "/grasp_target", 10)
        self.dropoff_pub = self.create_publisher(PoseStamped, "/fetch/dropoff", LATCHED)
        self.cmd_pub = self.create_publisher(Twist, self.cmd_vel_topic, 10)
        self.ee_pub = self.create_publisher(Vector3, "/arm/ee_delta", 10)
        self.gripper_pub = self.create_publisher(Bool, "/arm/gripper", 10)
        self.ee_yaw_pub = self.create_publisher(Float64, "/arm/ee_yaw", 10)
        self.status_pub = self.create_publisher(String, "~/status", LATCHED)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

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
        # Twice the lift's control rate: the policy node takes an input older than 3 control periods
        # (150 ms) as a dead source and holds still. At 20 Hz one timer tick late by more than 50 ms
        # (a busy 2-core machine, 4 Python threads here) did that mid-lift (seen in a soak log:
        # "stale /grasp_target (150 ms old > 150 ms)"); at 40 Hz a tick must be 100 ms late.
        # It runs only while a target is held (see held_target): idle, its 40 wake-ups a second cost
        # the executor a tenth of a core.
        if self.grasp_source == "perception":
            self._target_timer = self.create_timer(0.5 / self.rate_hz, self._publish_target, **g)
            self._target_timer.cancel()
        self.create_timer(1.0, self._publish_diagnostics, **g)
        self._publish_status()
        self.get_logger().info(f"ready: action /fetch; {len(self.params_.explore_waypoints)} exploration waypoints; "
                               f"lift controller {self.policy_node}; grasp target from {self.grasp_source}")

    def _configure(self, d) -> None:
        """Read every parameter through ``d`` (declare at start; get before each fetch)."""
        p = FetchParams()
        waypoints = d("explore_waypoints", [0.0], "Exploration waypoints, flat list x1, y1, yaw1, x2, ... (map frame; m, rad)")
        if len(waypoints) % 3:
            raise ValueError(f"explore_waypoints must hold (x, y, yaw) triples, got {len(waypoints)} numbers")
        self.params_ = FetchParams(
            min_match_score=d("min_match_score", p.min_match_score, "Least semantic-map score of a match (cosine)",
                              min_value=-1.0, max_value=1.0),
            near_miss_score=d("near_miss_score", p.near_miss_score, "After exploring, the best match scoring at least "
                              "this (under min_match_score) is looked at from close by and fetched only if it then "
                              "reaches min_match_score (>= min_match_score: off)", min_value=-1.0, max_value=1.0),
            explore_waypoints=[tuple(waypoints[i:i + 3]) for i in range(0, len(waypoints) - 2, 3)],
            look_alikes=self._look_alikes(d),
            look_around_yaws=d("look_around_yaws", p.look_around_yaws, "Headings looked at per waypoint (0: none)",
                               min_value=0, max_value=36),
            waypoint_alternates=d("waypoint_alternates", p.waypoint_alternates, "Free poses beside an unreachable "
                                  "exploration waypoint tried instead (0: none)", min_value=0, max_value=12),
            waypoint_alternate_distance=d("waypoint_alternate_distance", p.waypoint_alternate_distance,
                                          "Distance of those poses from the waypoint, m", min_value=0.1, max_value=5.0),
            support_looks=d("support_looks", p.support_looks, "After the waypoints, look at the top of every "
                            "free-standing support of the static map (table, cabinet, crate) from close by"),
            support_view_clearance=d("support_view_clearance", p.support_view_clearance, "Base centre to the "
                                     "support's side when looking at it, m", min_value=0.1, max_value=3.0),
            support_min_area=d("support_min_area", p.support_min_area, "Smallest support footprint looked at, m^2",
                               min_value=0.0, max_value=100.0),
            support_max_area=d("support_max_area", p.support_max_area, "Largest support footprint looked at, m^2",
                               min_value=0.0, max_value=100.0),
            support_max_side=d("support_max_side", p.support_max_side, "Longest side of a support looked at, m "
                               "(walls are longer)", min_value=0.1, max_value=100.0),
            explore_timeout_s=d("explore_timeout_s", p.explore_timeout_s, "Exploration time limit, s",
                                min_value=1.0, max_value=3600.0),
            max_grasp_attempts=d("max_grasp_attempts", p.max_grasp_attempts, "Grasps tried before GRASP_FAILED",
                                 min_value=1, max_value=20),
            max_nav_attempts=d("max_nav_attempts", p.max_nav_attempts, "Navigation tries per leg", min_value=1,
                               max_value=10),
            staging_alternates=d("staging_alternates", p.staging_alternates, "Slanted staging poses of the same "
                                 "side tried when one cannot be reached (0: none)", min_value=0, max_value=12),
            staging_alternate_spacing=d("staging_alternate_spacing", p.staging_alternate_spacing, "Least distance "
                                        "between those staging poses, m", min_value=0.05, max_value=3.0),
            staging_clearance=d("staging_clearance", p.staging_clearance, "Base centre to support edge at the "
                                "staging pose, m", min_value=0.1, max_value=3.0),
            grasp_clearance=d("grasp_clearance", p.grasp_clearance, "Base centre to support edge when grasping, m",
                              min_value=0.1, max_value=3.0),
            max_edge_distance=d("max_edge_distance", p.max_edge_distance, "Reach limit: object to support edge, m",
                                min_value=0.0, max_value=2.0),
            approach_headings=d("approach_headings", p.approach_headings, "Approach directions tried",
                                min_value=4, max_value=720),
            reobserve_max_shift=d("reobserve_max_shift", p.reobserve_max_shift, "Largest shift of a re-observed "
                                  "object, m", min_value=0.01, max_value=5.0),
            carry_offset=d("carry_offset", p.carry_offset, "Carried object ahead of base_link, m", min_value=0.0,
                           max_value=2.0),
            sensed_obstacle_margin=d("sensed_obstacle_margin", p.sensed_obstacle_margin, "Every staging pose planned "
                                     "on the static map blocked: poses are planned again around the obstacles "
                                     "navigation's sensors mark, grown by this, m", min_value=0.0, max_value=0.5),
            settle_s=d("settle_s", p.settle_s, "Wait after docking and before each look from a new place, s", min_value=0.0, max_value=30.0),
            look_while_driving=d("look_while_driving", p.look_while_driving, "While exploring, ask the map every "
                                 "look_period_s on the drives and turns and go for the object once it is named"),
            floor_grasps=d("floor_grasps", p.floor_grasps, "Grasp objects lying on the floor (false: they are "
                           "UNREACHABLE; the ground-truth ablation's lift grasps from tables only)"),
            floor_view_distance=d("floor_view_distance", p.floor_view_distance, "Base centre to an object on the "
                                  "floor where its grasp pose is estimated (the camera sees the floor from ~0.72 m "
                                  "ahead), m", min_value=0.5, max_value=3.0),
            floor_grasp_distance=d("floor_grasp_distance", p.floor_grasp_distance, "Base centre to an object on the "
                                   "floor when grasping (the lift was trained for 0.46-0.68 m), m",
                                   min_value=0.3, max_value=1.5),
            floor_square_up_deg=d("floor_square_up_deg", p.floor_square_up_deg, "A cube on the floor turned more "
                                  "than this from the approach (mod 90 deg) is approached again square to a face, "
                                  "deg (45: never)", min_value=0.0, max_value=45.0),
            max_drop_recoveries=d("max_drop_recoveries", p.max_drop_recoveries, "The carried object fell out of "
                                  "the hand on the way to the drop-off (felt through the fingers): fetch it again from "
                                  "where it fell this many times before GRASP_FAILED", min_value=0, max_value=5),
            drop_search_radius=d("drop_search_radius", p.drop_search_radius, "A match this far from where the "
                                 "object most likely fell (carry_offset ahead of the base when the fall was felt) is "
                                 "the fallen object; it is looked for from floor_view_distance away, m",
                                 min_value=0.1, max_value=5.0),
            drop_backoff=d("drop_backoff", p.drop_backoff, "After a fall with no free pose floor_view_distance from "
                           "where it fell, the base backs up this far before looking (the object lies near the "
                           "carry point, closer than the camera sees the floor), m", min_value=0.0, max_value=2.0),
        )
        self.robot_radius = d("robot_radius", 0.5, "Footprint radius used to check staging poses (as nav), m",
                              min_value=0.01, max_value=5.0)
        self.policy_node = d("policy_node", "/policy_node", "Lifecycle policy node serving the lift bundle")
        self.node_lost_s = d("node_lost_s", 3.0, "No navigation feedback for this long mid-goal (it sends it at "
                             "feedback_rate_hz while a goal runs): the node is taken as lost (its process died), the "
                             "base is stopped and the goal sent again once the action server is there, s (wall)",
                             min_value=0.1, max_value=60.0)
        self.nav_goal_timeout_s = d("nav_goal_timeout_s", 180.0, "A navigation goal still running after this long "
                                    "is cancelled and counts as failed (TIMEOUT), s (wall)", min_value=1.0,
                                    max_value=3600.0)
        self.node_restart_timeout_s = d("node_restart_timeout_s", 20.0, "Wait this long for a node that died "
                                        "mid-request (navigation, the grasp pose service, the semantic map) to come "
                                        "back (respawned by the launch file) and ask again; not back: the fetch ends "
                                        "ERROR, s (wall)", min_value=0.0, max_value=600.0)
        self.action_introspection = d("action_introspection", "contents", "Publish the /fetch action's "
                                      "goal, result and cancel exchanges as service events (recordable)",
                                      constraints="one of: off, metadata, contents")
        if self.action_introspection not in ("off", "metadata", "contents"):
            raise ValueError(f"action_introspection must be off, metadata or contents, got {self.action_introspection!r}")
        self.grasp_source = d("grasp_target_source", "perception", "Where the grasp target comes from: perception "
                              "(the grasp_pose service, robot mode) or topic (another node publishes /grasp_target "
                              "for the point on /fetch/grasp_request: the ground-truth ablation's simulator-side "
                              "node, robot_mode:=false); fixed at start", constraints="one of: perception, topic",
                              read_only=True)
        if self.grasp_source == "ground_truth":
            raise ValueError("grasp_target_source ground_truth is gone from the mission (a robot-side node reads no "
                             "simulator truth): use topic with the simulator-side ground_truth_grasp_target node "
                             "(launch/fetch.launch.yaml robot_mode:=false starts both)")
        if self.grasp_source not in ("perception", "topic"):
            raise ValueError(f"grasp_target_source must be perception or topic, got {self.grasp_source!r}")
        self.topic_target_timeout_s = d("topic_target_timeout_s", 3.0, "grasp_target_source topic: wait this long "
                                        "for /grasp_target after naming the object on /fetch/grasp_request; none "
                                        "(no object there, no publisher): the grasp attempt fails, s (wall)",
                                        min_value=0.1, max_value=60.0)
        self.grasp_pose_service = d("grasp_pose_service", "/grasp_pose/estimate", "EstimateGraspPose service "
                                    "(grasp_target_source: perception)")
        self.estimate_views = d("grasp_pose_views", 3, "Depth frames fused per grasp-pose estimate", min_value=1,
                                max_value=10)
        look = d("look_arm_point", [0.25, 0.45, 0.55], "Grasp point in base_link while the head camera looks for "
                 "the grasp pose (x, y, z), m: the arm out of the camera's view (in the carry pose it hides the table "
                 "ahead)")
        if len(look) != 3:
            raise ValueError("look_arm_point must be (x, y, z)")
        self.look_arm_point = np.array(look, dtype=float)
        self.estimate_attempts = d("grasp_pose_attempts", 3, "Grasp-pose estimates tried (waiting a moment between "
                                   "them) before the grasp is given up", min_value=1, max_value=20)
        self.cube_max_aspect = d("cube_max_aspect", 1.38, "Robot mode: a target the map calls a cube whose grasp-pose "
                                 "height exceeds this times its wider side is another object (WRONG_OBJECT; an upright "
                                 "cylinder stands 1.6x as high as wide); 0: not checked", min_value=0.0, max_value=10.0)
        self.cube_min_aspect = d("cube_min_aspect", 0.84, "Robot mode: a target asked for or named as a cube whose "
                                 "grasp-pose height is under this times its wider side is a flatter object (WRONG_OBJECT; "
                                 "a toy brick is 0.73; cubes measured 0.94-1.26 from the docking range); not applied to "
                                 "looks from afar (floor objects), where cubes read down to 0.77; 0: not checked",
                                 min_value=0.0, max_value=10.0)
        self.brick_max_aspect = d("brick_max_aspect", 0.84, "Robot mode: a target asked for or named as a lego or "
                                  "duplo whose grasp-pose height exceeds this times its wider side is another object "
                                  "(WRONG_OBJECT; a cube of its size is 1.0; bricks measured up to 0.78); 0: not checked",
                                  min_value=0.0, max_value=10.0)
        self.max_grasp_width = d("max_grasp_width", 0.07, "Robot mode: a target whose grasp-pose footprint is wider "
                                 "than this at its narrower side is more than the hand can close on (the Panda "
                                 "opens 8 cm): set aside, the search goes on, GRASP_FAILED if nothing else matches "
                                 "(cubes and toy bricks read at most 5.1 cm under depth noise; books, bowls, plates "
                                 "7.6 cm or more), m; 0: not checked", min_value=0.0, max_value=1.0)
        if self.params_.look_alikes and (self.grasp_source != "perception" or self.brick_max_aspect <= 0):
            # a look-alike match is lifted on the close look's say-so: without it (the ground-truth
            # grasp, or the brick check off) the mission would lift a red cube for "the red lego"
            self.params_.look_alikes = ()
        self.footprint_check_on_floor = d("footprint_check_on_floor", False, "Robot mode: also refuse an object on the "
                                          "floor whose close look's footprint is round where a cube was asked for (or "
                                          "square for a ball). Off: seen from 1 m through the depth noise a cube's top "
                                          "reads round view after view; the height check still applies")
        self.grasp_timeout = d("grasp_timeout_s", 14.0, "Time for one lift, s (sim time)", min_value=1.0,
                               max_value=600.0)
        self.lift_height = d("lift_height", 0.10, "Lift needed for a grasp to count, m", min_value=0.01, max_value=1.0)
        self.align_wrist = d("align_wrist", True, "Before the lift, turn the gripper square to the grasp target's "
                             "sides (/arm/ee_yaw = its yaw mod 90 deg in base_link: the held estimate in robot "
                             "mode, as policies/mobile_lift_perceived is evaluated; the answer on /grasp_target "
                             "with grasp_target_source topic); back to 0 when the arm is clear")
        self.wrist_turn_s = d("wrist_turn_s", 0.6, "Time given to a wrist turn before the lift starts, s (sim time)",
                              min_value=0.0, max_value=10.0)
        self.hold_s = d("hold_s", 1.0, "The lift must hold this long, s (sim time)", min_value=0.0, max_value=60.0)
        self.min_finger_width = d("min_finger_width", 0.02, "Closed fingers wider than this hold something, m",
                                  min_value=0.0, max_value=0.08)
        self.drop_confirm_s = d("drop_confirm_s", 0.3, "While carrying, fingers closed to min_finger_width or less "
                                "for this long mean the object fell out: the drive stops, s (wall)", min_value=0.0,
                                max_value=5.0)
        self.release_rise = d("release_rise", 0.10, "After opening, the hand rises this far, then closes again: "
                              "fingers that stop on something mean the object is still in the hand, m",
                              min_value=0.02, max_value=0.5)
        self.open_finger_width = d("open_finger_width", 0.07, "Fingers at least this wide have let go (drop), m",
                                   min_value=0.0, max_value=0.08)
        self.release_attempts = d("release_attempts", 3, "Open-the-gripper tries at the drop-off (close and reopen "
                                  "between them)", min_value=1, max_value=10)
        carry = d("carry_point", [0.40, 0.0, 0.60], "Grasp point in base_link while carrying (x, y, z), m")
        if len(carry) != 3:
            raise ValueError("carry_point must be (x, y, z)")
        self.carry_point = np.array(carry, dtype=float)
        place = d("place_point", [0.40, 0.0, -0.02], "Grasp point in base_link where the gripper opens (x, y, z), m: "
                  "6 cm above the floor (base_link is 0.08 m up), so a carried cube is let go just above it, not "
                  "dropped from the carry height; x should equal carry_offset")
        if len(place) != 3:
            raise ValueError("place_point must be (x, y, z)")
        self.place_point = np.array(place, dtype=float)
        self.dock_speed = d("dock_speed", 0.2, "Straight docking speed, m/s", min_value=0.01, max_value=1.0)
        self.cmd_vel_topic = d("cmd_vel_topic", "/cmd_vel", "Topic of the docking moves (geometry_msgs/Twist): /cmd_vel "
                               "drives the base directly; behind cmd_vel_mux an input of its own, /cmd_vel_mission")
        self.turn_speed = d("turn_speed", 1.2, "Turn rate when looking around, rad/s", min_value=0.05, max_value=3.0)
        self.look_period_s = d("look_period_s", 1.0, "Period of the map queries while driving and turning "
                               "(look_while_driving), s", min_value=0.1, max_value=10.0)
        self.base_frame = d("base_frame", "base_link", "Robot base frame")
        self.odom_frame = d("odom_frame", "odom", "Odometry frame: the grasp target is held in it during a grasp")
        self.map_frame = d("map_frame", "map", "Frame of navigation goals and of the semantic map")
        self.ee_frame = d("ee_frame", "panda_grasptarget", "Grasp point frame")
        self.rate_hz = d("control_rate_hz", 20.0, "Rate of the mission's own arm and docking loops, Hz",
                         min_value=1.0, max_value=200.0)
        self.arm_max_step = d("arm_max_step", 0.03, "Longest grasp-point step per arm command of the mission's own "
                              "arm moves with an empty hand (look, recover, after the put-down), m", min_value=0.001,
                              max_value=0.05)
        self.arm_max_step_carrying = d("arm_max_step_carrying", 0.02, "... and holding an object (stow, lowering it "
                                       "at the drop-off), m", min_value=0.001, max_value=0.05)

    @staticmethod
    def _look_alikes(d) -> Tuple[Tuple[str, str], ...]:
        default = [f"{word}={alike}" for word, alike in FetchParams().look_alikes]
        pairs = [p for p in d("look_alikes", default, "'word=look-alike' pairs: after exploring, "
                              "a query naming the word that nothing matched is asked again with the look-alike in its "
                              "place, and its answers (any score, best first) are lifted only if the close look's shape check of the asked words "
                              "passes (a toy brick reads as a cube of its colour from afar; brick_max_aspect tells "
                              "them apart). Robot mode with brick_max_aspect > 0 only; [''] : off") if p.strip()]
        bad = [p for p in pairs if p.count("=") != 1 or not all(x.strip() for x in p.split("="))]
        if bad:
            raise ValueError(f"look_alikes entries must read 'word=look-alike', got {bad}")
        return tuple(tuple(x.strip().lower() for x in p.split("=")) for p in pairs)

    # ------------------------------------------------------------------ inputs
    def _reject(self, what: str, kind: str, message: str) -> None:
        """Bad input: counted (/diagnostics ``rejected.<what>.<kind>``), logged once per kind every 5 s,
        and not used (the last good value stays)."""
        key = f"{what}.{kind}"
        with self.lock:
            self.rejected[key] = self.rejected.get(key, 0) + 1
            count = self.rejected[key]
        now = time.monotonic()
        if now - self._last_reject_log.get(key, -math.inf) >= 5.0:
            self._last_reject_log[key] = now
            self.get_logger().warning(f"rejected {what} ({kind}): {message} ({count} so far)")

    def _on_odom(self, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        values = (p.x, p.y, p.z, q.x, q.y, q.z, q.w)
        if not all(math.isfinite(v) for v in values) or q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w < 1e-12:
            self._reject("odom", "non_finite", "pose is not finite or has a zero quaternion")
            return
        self.odom = (p.x, p.y, p.z, yaw_of((q.x, q.y, q.z, q.w)), time.monotonic())

    def _grid_ok(self, msg: OccupancyGrid, what: str) -> bool:
        info = msg.info
        cells = int(info.width) * int(info.height)
        origin = info.origin.position
        if not (math.isfinite(info.resolution) and info.resolution > 0) or not all(
                math.isfinite(v) for v in (origin.x, origin.y, origin.z)):
            self._reject(what, "bad_geometry", f"resolution {info.resolution}, origin ({origin.x}, {origin.y})")
            return False
        if cells == 0 or cells != len(msg.data):
            self._reject(what, "size_mismatch", f"{info.width} x {info.height} cells but {len(msg.data)} values")
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
            self._reject("joint_states", "length_mismatch", f"{len(msg.name)} names, {len(msg.position)} positions")
            return
        if len(idx) == 2:
            pair = tuple(float(msg.position[i]) for i in idx)
            if not all(math.isfinite(v) for v in pair):
                self._reject("joint_states", "non_finite", f"finger positions {pair}")
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
        """The grasp target estimated before a lift, held in ``odom`` (None: none held)."""
        return self._held_target

    @held_target.setter
    def held_target(self, value: Optional[Tuple[np.ndarray, np.ndarray]]) -> None:
        self._held_target = value
        timer = self._target_timer
        if timer is not None:
            if value is None:
                timer.cancel()
            elif timer.is_canceled():
                timer.reset()

    def _publish_target(self) -> None:
        """While a grasp runs: the grasp target in the current base_link on /grasp_target.

        ``perception`` (robot mode): the estimate made once before the grasp, held in ``odom`` (the
        hand hides the object while it works; holding it in odom keeps the arm's nudges of the base
        from dragging it along) and re-expressed through /tf every control period: what
        policies/mobile_lift_perceived was trained on.
        """
        held = self.held_target
        if held is None:
            return
        try:
            p_base, q_base = to_frame(self.tf, held[0], held[1], self.odom_frame, self.base_frame)
        except KeyError as exc:
            self.get_logger().warning(f"grasp target: {exc}", throttle_duration_sec=5.0)
            return
        msg = PoseStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.base_frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p_base)
        (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
         msg.pose.orientation.w) = (float(v) for v in q_base)
        self.target_pub.publish(msg)

    def _publish_status(self) -> None:
        self.status_pub.publish(String(data=json.dumps(self.status)))

    def _publish_diagnostics(self) -> None:
        s = DiagnosticStatus(name="mission", hardware_id="rlstack", message=f"{self.status['phase']}: "
                             f"{self.status['detail']}"[:200])
        s.level = DiagnosticStatus.OK
        with self.lock:
            rejected = dict(self.rejected)
        values = {**self.status, "rejected_total": sum(rejected.values()),
                  **{f"rejected.{k}": n for k, n in sorted(rejected.items())}}
        s.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray(status=[s])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(arr)

    # ------------------------------------------------------------------ shutdown (rlstack_common.run_node)
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
            self._configure(lambda name, *_a, **_k: self.get_parameter(name).value)
        except ValueError as exc:
            self.goal_handle = None
            goal_handle.abort()
            return Fetch.Result(code=int(FetchCode.ERROR), reason=f"invalid parameters: {exc}")
        self.status.update(missions=self.status["missions"] + 1, query=req.query)
        ports = RosPorts(self, goal_handle)
        try:
            dropoff = ports.dropoff_in_map(req.dropoff)
            self.dropoff_pub.publish(req.dropoff)
            mission = FetchMission(ports, self.params_, self.robot_radius)
            result = mission.run(req.query, dropoff)
        except MissionAborted as exc:  # bad drop-off frame etc.
            from .fetch import FetchResult
            result = FetchResult(exc.code, exc.reason)
        except Exception as exc:  # never leave the robot moving on a bug
            self.get_logger().error(f"fetch failed with an internal error: {exc!r}")
            from .fetch import FetchResult
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
        self.status.update(phase="IDLE", detail=f"{result.code.name}: {result.reason}", last_result=result.code.name,
                           grasp_attempts=result.grasp_attempts,
                           target=None if result.target is None else result.target.label)
        if result.code == FetchCode.SUCCEEDED:
            self.status["succeeded"] += 1
        self._publish_status()
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
