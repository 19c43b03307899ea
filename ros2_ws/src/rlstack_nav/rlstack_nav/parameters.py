"""Every nav_controller parameter: name, default, unit, range, meaning (pure; no rclpy).

The node declares exactly these (``rlstack_common.param_table.declare_all``), the params file
``launch/params/nav_controller.yaml`` sets them, ``docs/reference/navigation.md`` lists them (generated
by ``tools/gen_reference.py``), and unit tests keep the three in step. :func:`nav_params` turns the
values into the cores' dataclasses; ``group``/``field`` say which dataclass field a parameter fills.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List

from rlstack_common.param_table import Param as TableParam
from rlstack_nav.controller import ControllerParams
from rlstack_nav.grid import CostParams
from rlstack_nav.navigator import NavParams
from rlstack_nav.obstacles import ObstacleParams


@dataclass(frozen=True)
class Param(TableParam):
    """A table entry (:class:`rlstack_common.param_table.Param`) with the core dataclass it fills."""

    group: str = "node"     # node | cost | controller | obstacles | navigator
    field: str = ""         # field name in the group's dataclass (default: name)


def _p(name, default, unit, description, lo=None, hi=None, group="node", field="", constraints=""):
    return Param(name, default, description, lo, hi, constraints, unit, group=group, field=field)


PARAMS: List[Param] = [
    # ------------------------------------------------------------------ node: topics, frames
    _p("map_yaml", "", "path", "map_server YAML of the static map (image relative to it); empty: no map, the node "
       "exits with an error", constraints="existing file"),
    _p("map_frame", "map", "", "global frame of the map, the plan and goals"),
    _p("odom_frame", "odom", "", "odometry frame (parent of base_frame in /odom)"),
    _p("base_frame", "base_link", "", "robot base frame (child in /odom)"),
    _p("publish_map_to_odom", True, "", "publish map -> odom as a static transform from map_to_odom_* (simulation: "
       "odometry is ground truth); false: read map -> odom from /tf or /tf_static (a localiser provides it)"),
    _p("map_to_odom_x", 0.0, "m", "x of the odom origin in the map frame (publish_map_to_odom)", -1e4, 1e4),
    _p("map_to_odom_y", 0.0, "m", "y of the odom origin in the map frame (publish_map_to_odom)", -1e4, 1e4),
    _p("map_to_odom_yaw", 0.0, "rad", "heading of the odom frame in the map frame (publish_map_to_odom)", -3.1416,
       3.1416),
    _p("localization_state_topic", "/localization/state", "", "std_msgs/String state of the localiser (rlstack_"
       "localization: OK, DEGRADED: ..., LOST: ...); while it starts with LOST new goals are refused and a running "
       "goal pauses (base stopped) with code LOCALIZATION_LOST; no message (e.g. AMCL): never paused; empty: ignored"),
    _p("localization_lost_timeout_s", 30.0, "s", "a goal paused this long for lost localisation is aborted with "
       "LOCALIZATION_LOST (steady clock)", 0.0, 3600.0),
    _p("odom_topic", "/odom", "", "nav_msgs/Odometry input (pose of base_frame in odom_frame)"),
    _p("cmd_vel_topic", "/cmd_vel", "", "geometry_msgs/Twist output"),
    _p("control_rate_hz", 30.0, "Hz", "control cycles per second of odometry time (a cycle runs on an /odom message "
       "at most this often)", 1.0, 200.0),
    _p("odom_timeout_s", 0.5, "s", "odometry older than this (wall clock since the last /odom message) stops the base "
       "and aborts the goal with STALE_ODOMETRY", 0.05, 10.0),
    _p("feedback_rate_hz", 10.0, "Hz", "action feedback rate", 0.1, 100.0),
    _p("diagnostics_rate_hz", 1.0, "Hz", "/diagnostics rate", 0.1, 100.0),
    _p("use_depth", True, "", "build obstacles from the depth camera"),
    _p("depth_topic", "/head_camera/depth/image_raw", "", "sensor_msgs/Image 32FC1 depth in metres"),
    _p("camera_info_topic", "/head_camera/camera_info", "", "sensor_msgs/CameraInfo of the depth image"),
    _p("depth_rate_hz", 5.0, "Hz", "depth frames processed per second at most (of image time)", 0.1, 100.0),
    # ------------------------------------------------------------------------ costmap
    _p("robot_radius", 0.50, "m", "circumscribed radius of the robot about base_frame (home robot: 0.48 m to the "
       "Panda hand in its ready pose); the centre never comes closer to an obstacle", 0.01, 5.0, "cost"),
    _p("inflation_radius", 1.0, "m", "distance from obstacles within which driving costs extra (>= robot_radius)",
       0.01, 10.0, "cost"),
    _p("cost_scaling_factor", 5.0, "1/m", "decay rate of the extra cost with distance beyond robot_radius", 0.0, 100.0,
       "cost"),
    _p("cost_weight", 2.0, "", "extra cost per metre at robot_radius (a metre there counts as 1 + cost_weight)",
       0.0, 100.0, "cost"),
    _p("occupied_threshold", 65, "%", "map value (0-100) at and above which a cell is an obstacle", 1, 100, "cost"),
    _p("allow_unknown", False, "", "plan through unknown (-1) map cells", group="cost"),
    # --------------------------------------------------------------------- controller
    _p("desired_linear_vel", 0.65, "m/s", "cruise speed (forward only)", 0.01, 5.0, "controller"),
    _p("max_angular_vel", 1.5, "rad/s", "|angular velocity| limit while following", 0.01, 10.0, "controller"),
    _p("lookahead_dist", 0.6, "m", "lookahead when use_velocity_scaled_lookahead_dist is false", 0.05, 5.0,
       "controller"),
    _p("min_lookahead_dist", 0.3, "m", "smallest lookahead", 0.05, 5.0, "controller"),
    _p("max_lookahead_dist", 0.9, "m", "largest lookahead", 0.05, 10.0, "controller"),
    _p("lookahead_time", 1.5, "s", "lookahead = |v| * lookahead_time, clamped to [min, max]", 0.0, 10.0, "controller"),
    _p("use_velocity_scaled_lookahead_dist", True, "", "scale the lookahead with the speed", group="controller"),
    _p("use_rotate_to_heading", True, "", "rotate in place when the path is far off the heading", group="controller"),
    _p("rotate_to_heading_min_angle", 0.785, "rad", "heading error to the carrot above which the robot turns in "
       "place (until under half of it)", 0.0, 3.1416, "controller"),
    _p("rotate_to_heading_angular_vel", 1.5, "rad/s", "turning speed in place", 0.01, 10.0, "controller"),
    _p("min_rotate_angular_vel", 0.1, "rad/s", "slowest in-place turn before the target angle", 0.0, 5.0, "controller"),
    _p("max_linear_accel", 0.5, "m/s^2", "linear acceleration limit", 0.01, 20.0, "controller"),
    _p("max_linear_decel", 0.8, "m/s^2", "linear deceleration limit (also sizes the stop at the goal)", 0.01, 20.0,
       "controller"),
    _p("max_angular_accel", 2.5, "rad/s^2", "angular acceleration limit", 0.01, 50.0, "controller"),
    _p("use_regulated_linear_velocity_scaling", True, "", "slow down on tight curves and near obstacles",
       group="controller"),
    _p("regulated_linear_scaling_min_radius", 0.9, "m", "curves tighter than this radius slow down "
       "(v *= radius / this)", 0.0, 10.0, "controller"),
    _p("regulated_linear_scaling_min_speed", 0.1, "m/s", "floor of the curvature and proximity slow-down", 0.0, 5.0,
       "controller"),
    _p("use_proximity_speed_scaling", True, "", "slow down when the robot's clearance is small", group="controller"),
    _p("proximity_scaling_dist", 0.3, "m", "clearance (robot circle to nearest obstacle) below which the speed "
       "scales down", 0.0, 5.0, "controller"),
    _p("proximity_scaling_gain", 1.0, "", "v *= gain * clearance / proximity_scaling_dist", 0.0, 10.0, "controller"),
    _p("approach_velocity_scaling_dist", 0.4, "m", "remaining path length below which the speed scales with it",
       0.0, 5.0, "controller"),
    _p("min_approach_linear_velocity", 0.1, "m/s", "slowest approach speed", 0.001, 1.0, "controller"),
    _p("xy_goal_tolerance", 0.05, "m", "default position tolerance (a goal's position_tolerance of 0 uses it)",
       0.001, 5.0, "controller"),
    _p("yaw_goal_tolerance", 0.1, "rad", "default heading tolerance (a goal's yaw_tolerance of 0 uses it)",
       0.001, 3.1416, "controller"),
    _p("goal_precision", 0.5, "", "fraction of the tolerances the controller aims for (margin for stopping)",
       0.05, 1.0, "controller"),
    _p("final_rotation_hold", 3.0, "", "once in position, the final turn in place goes on while the position "
       "estimate stays within this many xy tolerances (a localiser's corrections move the estimate while the robot "
       "turns; Nav2's stateful goal checker); 1: approach again as soon as it leaves the tolerance", 1.0, 20.0,
       "controller"),
    # ---------------------------------------------------------------------- obstacles
    _p("min_obstacle_height", 0.03, "m", "depth returns lower than this are floor", -1.0, 5.0, "obstacles"),
    _p("floor_noise_per_m2", 0.0, "m/m^2", "the floor threshold rises by this times depth squared (a noisy depth "
       "camera's far floor scatters upwards; 0: off)", 0.0, 0.1, "obstacles"),
    _p("max_obstacle_height", 1.40, "m", "depth returns higher than this cannot touch the robot", 0.0, 10.0,
       "obstacles"),
    _p("obstacle_max_range", 4.0, "m", "depth returns farther than this are ignored", 0.1, 50.0, "obstacles",
       "max_range"),
    _p("self_filter_radius", 0.55, "m", "depth returns this close to base_frame are the robot itself (the arm)",
       0.0, 5.0, "obstacles"),
    _p("static_margin", 0.08, "m", "depth returns this close to a map obstacle are that obstacle", 0.0, 1.0,
       "obstacles"),
    _p("static_noise_per_m2", 0.0, "m/m^2", "the static margin grows by this times depth squared (a noisy depth "
       "camera's far wall returns fall short of the wall; 0: off)", 0.0, 0.1, "obstacles"),
    _p("clear_margin", 0.10, "m", "an obstacle cell is cleared when the camera sees this much farther through it",
       0.0, 2.0, "obstacles"),
    _p("obstacle_persistence", 60.0, "s", "obstacle cells are forgotten after this (0: kept until seen through)",
       0.0, 3600.0, "obstacles", "persistence"),
    _p("depth_stride", 4, "px", "use every n-th pixel of the depth image in both directions", 1, 32, "obstacles",
       "stride"),
    # ---------------------------------------------------------------------- navigator
    _p("collision_check_distance", 1.5, "m", "path length ahead checked against map and obstacles every cycle",
       0.1, 20.0, "navigator"),
    _p("replan_interval", 0.5, "s", "time between replans while the path is blocked", 0.05, 10.0, "navigator"),
    _p("blocked_timeout", 3.0, "s", "time without a clear path before the goal ends BLOCKED", 0.0, 120.0,
       "navigator"),
    _p("max_replans", 10, "", "blocked-path replans per goal before the goal ends BLOCKED", 0, 1000, "navigator"),
    _p("max_path_deviation", 0.5, "m", "distance off the path that triggers a replan", 0.05, 10.0, "navigator"),
    _p("goal_timeout", 180.0, "s", "time per goal before it ends TIMEOUT (0: none)", 0.0, 86400.0, "navigator"),
    _p("path_spacing", 0.05, "m", "spacing of the points of the plan", 0.01, 1.0, "navigator"),
]

BY_NAME: Dict[str, Param] = {p.name: p for p in PARAMS}


def nav_params(values: Dict[str, Any]) -> NavParams:
    """Build the cores' parameters from ``name -> value`` (missing names take the defaults)."""
    groups: Dict[str, Dict[str, Any]] = {"cost": {}, "controller": {}, "obstacles": {}, "navigator": {}}
    for p in PARAMS:
        if p.group in groups:
            value = values.get(p.name, p.default)
            if isinstance(p.default, float) and not isinstance(value, bool):
                value = float(value)
            groups[p.group][p.field or p.name] = value
    cost = CostParams(**groups["cost"])
    if cost.inflation_radius < cost.robot_radius:
        raise ValueError(f"inflation_radius ({cost.inflation_radius}) must be >= robot_radius ({cost.robot_radius})")
    controller = ControllerParams(**groups["controller"])
    controller.validate()
    return NavParams(cost=cost, controller=controller, obstacles=ObstacleParams(**groups["obstacles"]),
                     **groups["navigator"])


def _check_table() -> None:
    """Every dataclass field is covered by exactly one parameter (run by the unit tests)."""
    want = {"cost": CostParams, "controller": ControllerParams, "obstacles": ObstacleParams}
    for group, cls in want.items():
        names = {p.field or p.name for p in PARAMS if p.group == group}
        missing = {f.name for f in fields(cls)} - names
        if missing:
            raise AssertionError(f"{cls.__name__} fields without a parameter: {sorted(missing)}")
    nav_fields = {f.name for f in fields(NavParams)} - {"cost", "controller", "obstacles", "max_dt"}
    names = {p.field or p.name for p in PARAMS if p.group == "navigator"}
    if nav_fields - names:
        raise AssertionError(f"NavParams fields without a parameter: {sorted(nav_fields - names)}")
