"""MissionHost: what :class:`rlstack_mission.ros_ports.RosPorts` uses of the mission node, and nothing more.

RosPorts does the mission's blocking steps through ROS in the action's thread; it needs the node's
settings, the latest state the node's subscriptions keep, the publishers and clients it talks through,
and a few services of the node itself. :class:`rlstack_mission.mission_node.MissionNode` implements
this protocol (``tests`` check that it has every member and that RosPorts reads no other); tests hand
RosPorts a small stand-in with the members a test needs.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Optional, Protocol, Tuple, runtime_checkable

import numpy as np

if TYPE_CHECKING:   # message, client and publisher types, for readers and type checkers only
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import OccupancyGrid
    from rclpy.action import ActionClient
    from rclpy.client import Client
    from rclpy.clock import Clock
    from rclpy.impl.rcutils_logger import RcutilsLogger
    from rclpy.publisher import Publisher

    from .frames import TfTree
    from .status import MissionStatus

__all__ = ["MissionHost"]


@runtime_checkable
class MissionHost(Protocol):
    """The mission node as :class:`rlstack_mission.ros_ports.RosPorts` sees it: settings, the latest
    state, outputs, clients and the node's clock, logger and shutdown flag."""

    # -- settings: parameters of the same name unless a comment names it (``rlstack_mission.parameters``
    #    SETTINGS), read again before each fetch; units as in docs/reference/mission.md
    map_frame: str
    odom_frame: str
    base_frame: str
    ee_frame: str
    rate_hz: float   # control_rate_hz
    policy_node: str
    grasp_source: str   # grasp_target_source: perception | topic
    grasp_pose_service: str
    look_period_s: float
    nav_goal_timeout_s: float
    node_lost_s: float
    node_restart_timeout_s: float
    dock_speed: float
    turn_speed: float
    drop_confirm_s: float
    topic_target_timeout_s: float
    estimate_views: int   # grasp_pose_views
    estimate_attempts: int   # grasp_pose_attempts
    max_grasp_width: float
    cube_max_aspect: float
    cube_min_aspect: float
    brick_max_aspect: float
    footprint_check_on_floor: bool
    align_wrist: bool
    wrist_turn_s: float
    grasp_timeout: float   # grasp_timeout_s
    lift_height: float
    hold_s: float
    min_finger_width: float
    open_finger_width: float
    release_rise: float
    release_attempts: int
    look_arm_point: np.ndarray   # grasp points in base_link (x, y, z), m
    carry_point: np.ndarray
    place_point: np.ndarray
    lower_on_approach_m: float
    arm_max_step: float
    arm_max_step_carrying: float
    arm_max_step_to_lift: float

    # -- the latest state, kept by the node's subscriptions
    tf: "TfTree"                        # /tf and /tf_static
    odom: Optional[Tuple[float, float, float, float, float]]   # /odom: x, y, z, yaw, monotonic time received
    grid: Optional["OccupancyGrid"]     # /map
    obstacle_grid: Optional["OccupancyGrid"]   # /nav_controller/obstacle_grid
    finger_pair: Tuple[float, ...]      # the two finger joints of /joint_states, m (() until received)
    topic_target: Optional["PoseStamped"]   # the last /grasp_target (grasp_source topic)
    last_topic_target: float            # monotonic time it arrived (-inf: none yet)

    @property
    def fingers(self) -> Optional[float]:
        """Gripper opening (the sum of the two finger joints), m; None until /joint_states arrives."""

    @property
    def holding(self) -> bool:
        """The fingers closed on something (wider than ``min_finger_width``)."""

    #: the grasp target held in ``odom_frame`` as (position, quaternion) while a grasp runs (None: none);
    #: setting it starts (or, with None, stops) its publication on /grasp_target in ``base_frame``
    held_target: Optional[Tuple[np.ndarray, np.ndarray]]

    # -- outputs
    cmd_pub: "Publisher"       # geometry_msgs/Twist on cmd_vel_topic: the docking moves and turns
    ee_pub: "Publisher"        # geometry_msgs/Vector3 on /arm/ee_delta
    gripper_pub: "Publisher"   # std_msgs/Bool on /arm/gripper (True: open)
    ee_yaw_pub: "Publisher"    # std_msgs/Float64 on /arm/ee_yaw
    obstacles_pub: "Publisher"  # geometry_msgs/PoseArray on /nav_controller/obstacles (empty: forget the sensed)
    request_pub: "Publisher"   # geometry_msgs/PointStamped on /fetch/grasp_request (grasp_source topic only)
    status: "MissionStatus"    # /mission/status and /diagnostics (RosPorts sets the phase)

    # -- clients
    query_client: "Client"         # /semantic_map/query (QueryObjects)
    nav_client: "ActionClient"     # /navigate_to (NavigateTo)
    get_state: "Client"            # <policy_node>/get_state
    change_state: "Client"         # <policy_node>/change_state
    grasp_pose_client: Optional["Client"]   # grasp_pose_service (grasp_source perception; else None)

    # -- the node itself
    stopping: threading.Event   # set on SIGINT/SIGTERM: a running fetch ends at its next check

    def get_clock(self) -> "Clock":
        """The node's clock (sim time under use_sim_time)."""

    def get_logger(self) -> "RcutilsLogger":
        """The node's logger."""
