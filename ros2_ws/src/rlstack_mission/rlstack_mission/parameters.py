"""The mission node's parameter table (pure Python, no rclpy).

``mission_node`` declares :data:`MISSION` with ``rlstack_common.param_table.declare_all`` at start and
reads the same names again before each fetch (values set at run time apply from the next fetch);
``launch/params/mission.yaml`` and docs/reference/mission.md are checked against (the docs generated
from) it. :func:`configure` turns the values into what the node uses: the core's
:class:`rlstack_mission.fetch.FetchParams` (each field a parameter of the same name;
``explore_waypoints`` a flat list of (x, y, yaw) triples, ``look_alikes`` 'word=look-alike' strings)
and the node's own settings, by the attribute names of :class:`rlstack_mission.host.MissionHost`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Dict, List, Mapping, Tuple

import numpy as np

from rlstack_common.param_table import Param as P

from .checks import EQUAL_SIDED_SHAPES, FLAT_SHAPES
from .fetch import FetchParams

__all__ = ["MISSION", "SETTINGS", "configure"]

_F = FetchParams()

MISSION: List[P] = [
    P("explore_waypoints", [0.0], "Exploration waypoints, flat list x1, y1, yaw1, x2, ... (map frame; m, rad)"),
    P("min_match_score", _F.min_match_score, "Least semantic-map score of a match (cosine)", -1.0, 1.0),
    P("near_miss_score", _F.near_miss_score, "After exploring, the best match scoring at least this (under "
      "min_match_score) is looked at from close by and fetched only if it then reaches min_match_score (>= "
      "min_match_score: off)", -1.0, 1.0),
    P("look_alikes", [f"{word}={alike}" for word, alike in _F.look_alikes], "'word=look-alike' pairs: after "
      "exploring, a query naming the word that nothing matched is asked again with the look-alike in its place, and "
      "its answers (any score, best first) are lifted only if the close look's shape check of the asked words passes "
      "(a toy brick reads as a cube of its colour from afar; brick_max_aspect tells them apart; 'cube=thing' takes "
      "any object of the asked colour, and cube_max_aspect, cube_min_aspect and the footprint decide; an answer the "
      "map names a ball or cylinder is not taken for a cube). The word must be one the close look checks: lego or "
      "duplo (kept with brick_max_aspect > 0), cube (kept with cube_max_aspect > 0); robot mode only; [''] : off"),
    P("look_around_yaws", _F.look_around_yaws, "Headings looked at per waypoint (0: none)", 0, 36),
    P("waypoint_view_range", _F.waypoint_view_range, "A waypoint sees a support (table, cabinet, crate of the static "
      "map) whose nearest edge lies this close in line of sight; the waypoints are visited in the order that sees "
      "every support soonest on average, m", 0.1, 20.0),
    P("waypoint_alternates", _F.waypoint_alternates, "Free poses beside an unreachable exploration waypoint tried "
      "instead (0: none)", 0, 12),
    P("waypoint_alternate_distance", _F.waypoint_alternate_distance, "Distance of those poses from the waypoint, m",
      0.1, 5.0),
    P("support_looks", _F.support_looks, "After the waypoints, look at the top of every free-standing support of the "
      "static map (table, cabinet, crate) from close by"),
    P("support_view_clearance", _F.support_view_clearance, "Base centre to the support's side when looking at it, m",
      0.1, 3.0),
    P("support_min_area", _F.support_min_area, "Smallest support footprint looked at, m^2", 0.0, 100.0),
    P("support_max_area", _F.support_max_area, "Largest support footprint looked at, m^2", 0.0, 100.0),
    P("support_max_side", _F.support_max_side, "Longest side of a support looked at, m (walls are longer)",
      0.1, 100.0),
    P("explore_timeout_s", _F.explore_timeout_s, "Exploration time limit, s", 1.0, 3600.0),
    P("max_grasp_attempts", _F.max_grasp_attempts, "Grasps tried before GRASP_FAILED", 1, 20),
    P("max_nav_attempts", _F.max_nav_attempts, "Navigation tries per leg", 1, 10),
    P("staging_alternates", _F.staging_alternates, "Slanted staging poses of the same side tried when one cannot be "
      "reached (0: none)", 0, 12),
    P("staging_alternate_spacing", _F.staging_alternate_spacing, "Least distance between those staging poses, m",
      0.05, 3.0),
    P("staging_clearance", _F.staging_clearance, "Base centre to support edge at the staging pose, m", 0.1, 3.0),
    P("grasp_clearance", _F.grasp_clearance, "Base centre to support edge when grasping, m", 0.1, 3.0),
    P("max_edge_distance", _F.max_edge_distance, "Reach limit: object to support edge, m", 0.0, 2.0),
    P("approach_headings", _F.approach_headings, "Approach directions tried", 4, 720),
    P("approach_edge_margin", _F.approach_edge_margin, "Sides of the support whose edge lies within this of the "
      "nearest edge's distance from the object are equally good: of those, the one whose staging pose is nearest "
      "the robot is tried first (0: the nearest edge first), m", 0.0, 2.0),
    P("reobserve_max_shift", _F.reobserve_max_shift, "Largest shift of a re-observed object, m", 0.01, 5.0),
    P("carry_offset", _F.carry_offset, "Carried object ahead of base_link, m", 0.0, 2.0),
    P("dropoff_headings", _F.dropoff_headings, "The stand pose behind the drop-off at its heading not reached: the "
      "stand poses at this many headings around the drop-off point (360 deg / n apart) are tried, nearest that "
      "heading first, and the object is put down on the point from the first one reached (1: the asked heading "
      "only)", 1, 72),
    P("drop_look_distance", _F.drop_look_distance, "No stand pose at the drop-off reached: the robot looks at the "
      "drop-off from this far behind a free stand pose, facing it, so that navigation's obstacle grid clears what "
      "the camera sees through, and tries the stand poses again (0: gives up at once), m", 0.0, 5.0),
    P("drop_clear_obstacles", _F.drop_clear_obstacles, "Still no stand pose at the drop-off reached (after the look): "
      "the mission has navigation forget its sensed obstacles (an empty PoseArray on /nav_controller/obstacles; "
      "marks made while the pose estimate was off stay until the camera sees through them), waits settle_s for "
      "the camera to mark what stands there now, and tries the stand poses once more, as Nav2's clear-costmap "
      "recovery does (false: gives up)"),
    P("sensed_obstacle_margin", _F.sensed_obstacle_margin, "Every staging pose planned on the static map blocked: "
      "poses are planned again around the obstacles navigation's sensors mark, grown by this, m", 0.0, 0.5),
    P("settle_s", _F.settle_s, "Wait after docking and before each look from a new place, s", 0.0, 30.0),
    P("look_while_driving", _F.look_while_driving, "While exploring, ask the map every look_period_s on the drives "
      "and turns and go for the object once it is named"),
    P("floor_grasps", _F.floor_grasps, "Grasp objects lying on the floor (false: they are UNREACHABLE; the "
      "ground-truth ablation's lift grasps from tables only)"),
    P("floor_view_distance", _F.floor_view_distance, "Base centre to an object on the floor where its grasp pose is "
      "estimated (the camera sees the floor from ~0.72 m ahead), m", 0.5, 3.0),
    P("floor_grasp_distance", _F.floor_grasp_distance, "Base centre to an object on the floor when grasping (the "
      "lift was trained for 0.46-0.68 m), m", 0.3, 1.5),
    P("floor_square_up_deg", _F.floor_square_up_deg, "A cube on the floor turned more than this from the approach "
      "(mod 90 deg) is approached again square to a face, deg (45: never)", 0.0, 45.0),
    P("max_drop_recoveries", _F.max_drop_recoveries, "The carried object fell out of the hand on the way to the "
      "drop-off (felt through the fingers): fetch it again from where it fell this many times before GRASP_FAILED",
      0, 5),
    P("drop_search_radius", _F.drop_search_radius, "A match this far from where the object most likely fell "
      "(carry_offset ahead of the base when the fall was felt) is the fallen object; it is looked for from "
      "floor_view_distance away, m", 0.1, 5.0),
    P("drop_backoff", _F.drop_backoff, "After a fall with no free pose floor_view_distance from where it fell, the "
      "base backs up this far before looking (the object lies near the carry point, closer than the camera sees the "
      "floor), m", 0.0, 2.0),
    P("robot_radius", 0.5, "Footprint radius used to check staging poses (as nav), m", 0.01, 5.0),
    P("policy_node", "/policy_node", "Lifecycle policy node serving the lift bundle"),
    P("node_lost_s", 3.0, "No navigation feedback for this long mid-goal (it sends it at feedback_rate_hz while a "
      "goal runs): the node is taken as lost (its process died), the base is stopped and the goal sent again once "
      "the action server is there, s (wall)", 0.1, 60.0),
    P("nav_goal_timeout_s", 180.0, "A navigation goal still running after this long is cancelled and counts as "
      "failed (TIMEOUT), s (wall)", 1.0, 3600.0),
    P("node_restart_timeout_s", 20.0, "Wait this long for a node that died mid-request (navigation, the grasp pose "
      "service, the semantic map) to come back (respawned by the launch file) and ask again; not back: the fetch "
      "ends ERROR, s (wall)", 0.0, 600.0),
    P("action_introspection", "contents", "Publish the /fetch action's goal, result and cancel exchanges as service "
      "events (recordable)", constraints="one of: off, metadata, contents"),
    P("grasp_target_source", "perception", "Where the grasp target comes from: perception (the grasp_pose service, "
      "robot mode) or topic (another node publishes /grasp_target for the point on /fetch/grasp_request: the "
      "ground-truth ablation's simulator-side node, robot_mode:=false); fixed at start",
      constraints="one of: perception, topic", read_only=True),
    P("topic_target_timeout_s", 3.0, "grasp_target_source topic: wait this long for /grasp_target after naming the "
      "object on /fetch/grasp_request; none (no object there, no publisher): the grasp attempt fails, s (wall)",
      0.1, 60.0),
    P("grasp_pose_service", "/grasp_pose/estimate", "EstimateGraspPose service (grasp_target_source: perception)"),
    P("grasp_pose_views", 3, "Depth frames fused per grasp-pose estimate", 1, 10),
    P("look_arm_point", [0.25, 0.45, 0.55], "Grasp point in base_link while the head camera looks for the grasp pose "
      "(x, y, z), m: the arm out of the camera's view (in the carry pose it hides the table ahead)"),
    P("grasp_pose_attempts", 3, "Grasp-pose estimates tried (waiting a moment between them) before the grasp is "
      "given up", 1, 20),
    P("cube_max_aspect", 1.38, "Robot mode: a target the map calls a cube whose grasp-pose height exceeds this times "
      "its wider side is another object (WRONG_OBJECT; an upright cylinder stands 1.6x as high as wide); 0: not "
      "checked", 0.0, 10.0),
    P("cube_min_aspect", 0.84, "Robot mode: a target asked for or named as a cube whose grasp-pose height is under "
      "this times its wider side is a flatter object (WRONG_OBJECT; a toy brick is 0.73; cubes measured 0.94-1.26 "
      "from the docking range); not applied to looks from afar (floor objects), where cubes read down to 0.77; 0: "
      "not checked", 0.0, 10.0),
    P("brick_max_aspect", 0.84, "Robot mode: a target asked for or named as a lego or duplo whose grasp-pose height "
      "exceeds this times its wider side is another object (WRONG_OBJECT; a cube of its size is 1.0; bricks measured "
      "up to 0.78); 0: not checked", 0.0, 10.0),
    P("max_grasp_width", 0.07, "Robot mode: a target whose grasp-pose footprint is wider than this at its narrower "
      "side is more than the hand can close on (the Panda opens 8 cm): set aside, the search goes on, GRASP_FAILED "
      "if nothing else matches (cubes and toy bricks read at most 5.1 cm under depth noise; books, bowls, plates 7.6 "
      "cm or more), m; 0: not checked", 0.0, 1.0),
    P("footprint_check_on_floor", False, "Robot mode: also refuse an object on the floor whose close look's "
      "footprint is round where a cube was asked for (or square for a ball). Off: seen from 1 m through the depth "
      "noise a cube's top reads round view after view; the height check still applies"),
    P("grasp_timeout_s", 14.0, "Time for one lift, s (sim time)", 1.0, 600.0),
    P("lift_height", 0.1, "Lift needed for a grasp to count, m", 0.01, 1.0),
    P("align_wrist", True, "Before the lift, turn the gripper square to the grasp target's sides (/arm/ee_yaw = its "
      "yaw mod 90 deg in base_link: the held estimate in robot mode, as policies/mobile_lift_perceived is evaluated; "
      "the answer on /grasp_target with grasp_target_source topic); back to 0 when the arm is clear"),
    P("wrist_turn_s", 0.6, "Time given to a wrist turn before the lift starts, s (sim time)", 0.0, 10.0),
    P("hold_s", 1.0, "The lift must hold this long, s (sim time)", 0.0, 60.0),
    P("min_finger_width", 0.02, "Closed fingers wider than this hold something, m", 0.0, 0.08),
    P("drop_confirm_s", 0.3, "While carrying, fingers closed to min_finger_width or less for this long mean the "
      "object fell out: the drive stops, s (wall)", 0.0, 5.0),
    P("release_rise", 0.1, "After opening, the hand rises this far, then closes again: fingers that stop on "
      "something mean the object is still in the hand, m", 0.02, 0.5),
    P("open_finger_width", 0.07, "Fingers at least this wide have let go (drop), m", 0.0, 0.08),
    P("release_attempts", 3, "Open-the-gripper tries at the drop-off (close and reopen between them)", 1, 10),
    P("carry_point", [0.4, 0.0, 0.6], "Grasp point in base_link while carrying (x, y, z), m"),
    P("lower_on_approach_m", 1.0, "While carrying, the hand starts down to place_point once the base is this close "
      "to its stand pose at the drop-off (straight line), so that the put-down's descent overlaps the drive's end "
      "and its turn, m (0: the hand goes down at the stand)", 0.0, 5.0),
    P("place_point", [0.4, 0.0, -0.02], "Grasp point in base_link where the gripper opens (x, y, z), m: 6 cm above "
      "the floor (base_link is 0.08 m up), so a carried cube is let go just above it, not dropped from the carry "
      "height; x should equal carry_offset"),
    P("dock_speed", 0.2, "Straight docking speed, m/s", 0.01, 1.0),
    P("cmd_vel_topic", "/cmd_vel", "Topic of the docking moves (geometry_msgs/Twist): /cmd_vel drives the base "
      "directly; behind cmd_vel_mux an input of its own, /cmd_vel_mission"),
    P("turn_speed", 2.0, "Turn rate when looking around, rad/s", 0.05, 3.0),
    P("look_period_s", 1.0, "Period of the map queries while driving and turning (look_while_driving), s", 0.1, 10.0),
    P("base_frame", "base_link", "Robot base frame"),
    P("odom_frame", "odom", "Odometry frame: the grasp target is held in it during a grasp"),
    P("map_frame", "map", "Frame of navigation goals and of the semantic map"),
    P("ee_frame", "panda_grasptarget", "Grasp point frame"),
    P("control_rate_hz", 20.0, "Rate of the mission's own arm and docking loops, Hz", 1.0, 200.0),
    P("arm_max_step", 0.03, "Longest grasp-point step per arm command of the mission's own arm moves with an empty "
      "hand (look, recover, after the put-down), m", 0.001, 0.05),
    P("arm_max_step_carrying", 0.02, "... and holding an object (stow, lowering it at the drop-off), m", 0.001, 0.05),
    P("arm_max_step_to_lift", 0.01, "... and of the move from the look pose to where the lift starts, after the grasp "
      "pose is estimated: a faster swing slid the base 2 cm on its locked wheels (PyBullet), which odometry does not "
      "see, and the held target was that far off the object, m", 0.001, 0.05),
]

#: the node's own settings (not FetchParams fields): node attribute -> the parameter it is read from
SETTINGS: Dict[str, str] = {
    "robot_radius": "robot_radius",
    "policy_node": "policy_node",
    "node_lost_s": "node_lost_s",
    "nav_goal_timeout_s": "nav_goal_timeout_s",
    "node_restart_timeout_s": "node_restart_timeout_s",
    "action_introspection": "action_introspection",
    "grasp_source": "grasp_target_source",
    "topic_target_timeout_s": "topic_target_timeout_s",
    "grasp_pose_service": "grasp_pose_service",
    "estimate_views": "grasp_pose_views",
    "look_arm_point": "look_arm_point",
    "estimate_attempts": "grasp_pose_attempts",
    "cube_max_aspect": "cube_max_aspect",
    "cube_min_aspect": "cube_min_aspect",
    "brick_max_aspect": "brick_max_aspect",
    "max_grasp_width": "max_grasp_width",
    "footprint_check_on_floor": "footprint_check_on_floor",
    "grasp_timeout": "grasp_timeout_s",
    "lift_height": "lift_height",
    "align_wrist": "align_wrist",
    "wrist_turn_s": "wrist_turn_s",
    "hold_s": "hold_s",
    "min_finger_width": "min_finger_width",
    "drop_confirm_s": "drop_confirm_s",
    "release_rise": "release_rise",
    "open_finger_width": "open_finger_width",
    "release_attempts": "release_attempts",
    "carry_point": "carry_point",
    "place_point": "place_point",
    "lower_on_approach_m": "lower_on_approach_m",
    "dock_speed": "dock_speed",
    "cmd_vel_topic": "cmd_vel_topic",
    "turn_speed": "turn_speed",
    "look_period_s": "look_period_s",
    "base_frame": "base_frame",
    "odom_frame": "odom_frame",
    "map_frame": "map_frame",
    "ee_frame": "ee_frame",
    "rate_hz": "control_rate_hz",
    "arm_max_step": "arm_max_step",
    "arm_max_step_carrying": "arm_max_step_carrying",
    "arm_max_step_to_lift": "arm_max_step_to_lift",
}

#: settings given as (x, y, z) points in base_link, m (numpy arrays for the node)
_POINTS = ("look_arm_point", "carry_point", "place_point")


def _waypoints(flat: Any) -> List[Tuple[float, ...]]:
    if len(flat) % 3:
        raise ValueError(f"explore_waypoints must hold (x, y, yaw) triples, got {len(flat)} numbers")
    return [tuple(flat[i:i + 3]) for i in range(0, len(flat) - 2, 3)]


#: the words a look-alike may stand in for, and the height check that tells them from it: a look-alike
#: answer is lifted on the close look's say-so, so a word without a conclusive check would be lifted on
#: the look-alike's match alone ("ball=thing" would bring any red object for "the red ball")
_CHECKED_WORDS = {**{w: "cube_max_aspect" for w in EQUAL_SIDED_SHAPES}, **{w: "brick_max_aspect" for w in FLAT_SHAPES}}


def _look_alikes(entries: Any) -> Tuple[Tuple[str, ...], ...]:
    pairs = [p for p in entries if p.strip()]
    bad = [p for p in pairs if p.count("=") != 1 or not all(x.strip() for x in p.split("="))]
    if bad:
        raise ValueError(f"look_alikes entries must read 'word=look-alike', got {bad}")
    out = tuple(tuple(x.strip().lower() for x in p.split("=")) for p in pairs)
    unchecked = [f"{w}={a}" for w, a in out if w not in _CHECKED_WORDS]
    if unchecked:
        raise ValueError(f"look_alikes {unchecked}: the close look checks the shape of a {', '.join(_CHECKED_WORDS)} "
                         "only, and a look-alike's answer is lifted on that check")
    return out


def _point(v: Mapping[str, Any], name: str) -> np.ndarray:
    if len(v[name]) != 3:
        raise ValueError(f"{name} must be (x, y, z)")
    return np.array(v[name], dtype=float)


def configure(v: Mapping[str, Any]) -> Tuple[FetchParams, Dict[str, Any]]:
    """(the core's parameters, the node's settings by attribute) from the values of :data:`MISSION`;
    ValueError names an invalid value or combination."""
    waypoints = _waypoints(v["explore_waypoints"])
    look_alikes = _look_alikes(v["look_alikes"])
    if v["action_introspection"] not in ("off", "metadata", "contents"):
        raise ValueError(f"action_introspection must be off, metadata or contents, got {v['action_introspection']!r}")
    source = v["grasp_target_source"]
    if source == "ground_truth":
        raise ValueError("grasp_target_source ground_truth is gone from the mission (a robot-side node reads no "
                         "simulator truth): use topic with the simulator-side ground_truth_grasp_target node "
                         "(launch/fetch.launch.yaml robot_mode:=false starts both)")
    if source not in ("perception", "topic"):
        raise ValueError(f"grasp_target_source must be perception or topic, got {source!r}")
    points = {name: _point(v, name) for name in _POINTS}
    # a look-alike match is lifted on the close look's say-so: without it (the ground-truth grasp, or
    # the word's height check off) the mission would lift a red cube for "the red lego"
    look_alikes = tuple((w, a) for w, a in look_alikes if source == "perception" and v[_CHECKED_WORDS[w]] > 0)
    core = {f.name: v[f.name] for f in fields(FetchParams) if f.name in v}
    params = FetchParams(**{**core, "explore_waypoints": waypoints, "look_alikes": look_alikes})
    own = {attr: points.get(name, v[name]) for attr, name in SETTINGS.items()}
    return params, own
