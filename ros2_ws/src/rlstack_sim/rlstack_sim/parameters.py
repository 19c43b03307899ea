"""Every sim_bridge parameter: name, default, description, range (pure Python, no rclpy).

The node declares exactly these, in this order, through ``rlstack_common.param_table.declare_all``;
docs/reference/sim-bridge.md lists them. :func:`depth_noise` and :func:`odometry_errors` turn the values into
the sim_bridges dataclasses.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from rlstack_common.param_table import Param
from rlstack_sim.config import MODES
from sim_bridges.sensor_noise import DepthNoise
from sim_bridges.wheel_odometry import OdometryErrors

__all__ = ["Param", "bridge_parameters", "depth_noise", "odometry_errors"]


def bridge_parameters(scenes: Sequence[str], backends: Sequence[str]) -> List[Param]:
    """The parameters, for a build whose scenes and backends are ``scenes`` and ``backends``."""
    P = Param
    e0 = OdometryErrors()
    return [
        P("scene", "home", "Scene to load", constraints="one of: " + ", ".join(scenes)),
        P("backend", "pybullet", "Simulator backend", constraints="one of: " + ", ".join(backends)),
        P("seed", 0, "Seed of the initial reset (object placement, initial state)", 0, 2**31 - 1),
        P("physics_rate_hz", 240.0, "Physics integration rate, Hz", 1.0, 10000.0),
        P("control_rate_hz", 60.0, "Control rate, Hz; must divide physics_rate_hz", 1.0, 10000.0),
        P("mode", "realtime", "Stepping mode", constraints="one of: " + ", ".join(MODES)),
        P("camera_rate_hz", 20.0, "Camera render/publish rate, Hz (0: off)", 0.0, 1000.0),
        P("camera_enabled", True, "Render and publish the scene's cameras"),
        P("camera_in_lockstep", False, "Lockstep mode: also render cameras (every camera period of sim time)"),
        P("depth_noise", False, "Make published depth like an RGB-D camera's: range noise growing with "
          "z^2, disparity quantisation, no return at depth edges and grazing angles (robot mode: on)"),
        P("depth_noise_k", DepthNoise.k_z2, "Depth noise std = depth_noise_sigma0 + k z^2, k in 1/m "
          "(0.0025: a RealSense D435)", 0.0, 1.0),
        P("depth_noise_sigma0", DepthNoise.sigma_0, "Range-independent depth noise std, m", 0.0, 1.0),
        P("depth_noise_dropout", DepthNoise.dropout, "Share of depth pixels lost at random", 0.0, 1.0),
        P("rgb_noise_std", 0.0, "RGB noise std, 0..255 units (0: off; applies with depth_noise)", 0.0, 255.0),
        P("wheel_odometry", False, "Publish /odom and odom -> base_link integrated from the "
          "wheel angles with the odom_* errors below (drift; robot mode: on) instead of the "
          "true pose; ground truth is then published in 'map' (= the world)"),
        P("odom_left_radius_scale", e0.left_radius_scale, "Wheel odometry: believed / true "
          "left wheel radius", 0.5, 1.5),
        P("odom_right_radius_scale", e0.right_radius_scale, "Wheel odometry: believed / true "
          "right wheel radius", 0.5, 1.5),
        P("odom_track_scale", e0.track_scale, "Wheel odometry: believed / effective track width", 0.5, 1.5),
        P("odom_slip_xx", e0.slip_xx, "Wheel odometry: distance noise std after 1 m driven, m/sqrt(m)", 0.0, 1.0),
        P("odom_slip_thth", e0.slip_thth, "Wheel odometry: heading noise std after 1 rad turned, "
          "rad/sqrt(rad)", 0.0, 1.0),
        P("odom_slip_ths", e0.slip_ths, "Wheel odometry: heading noise std after 1 m driven, "
          "rad/sqrt(m)", 0.0, 1.0),
        P("odom_yaw_bias", e0.yaw_bias, "Wheel odometry: yaw-rate bias while the wheels turn, rad/s", -1.0, 1.0),
        P("odom_gyro", e0.gyro, "Wheel odometry: heading from a simulated yaw-rate gyro (the base's true "
          "turn + odom_gyro_noise + odom_yaw_bias) instead of the wheels' difference; sees a base that "
          "turns with its wheels still"),
        P("odom_gyro_noise", e0.gyro_noise, "Wheel odometry with odom_gyro: the gyro's angle random walk, "
          "rad/sqrt(s)", 0.0, 1.0),
        P("publish_rate_hz", 60.0, "Rate of /joint_states, /odom, /tf, Hz of sim time (capped at the"
          " control rate; 0: off)", 0.0, 10000.0),
        P("ground_truth_rate_hz", 10.0, "Rate of the ground-truth topics, Hz of sim time (0: off)", 0.0, 10000.0),
        P("cmd_vel_stamped", False, "/cmd_vel type: false Twist, true TwistStamped"),
        P("command_timeout_s", 0.5, "Command watchdog: stale commands -> safe state, s (0: off); "
          "wall time in realtime mode, sim time otherwise", 0.0, 3600.0),
        P("max_linear_speed", 1.0, "Base |linear.x| limit, m/s (clipped)", 0.0, 100.0),
        P("max_angular_speed", 2.0, "Base |angular.z| limit, rad/s (clipped)", 0.0, 100.0),
        P("max_linear_accel", 1.0, "Base linear acceleration limit, m/s^2 (0: none)", 0.0, 1000.0),
        P("max_angular_accel", 3.0, "Base angular acceleration limit, rad/s^2 (0: none)", 0.0, 1000.0),
        P("max_ee_step", 0.05, "Longest end-effector delta per message, m (longer: scaled down)", 0.001, 1.0),
        P("ee_step_period_s", 0.0, "Spread each end-effector step over this long, s of sim time (0: one control "
          "period); set it to the arm commands' period when they come slower than the control rate", 0.0, 10.0),
        P("gui", False, "Open the simulator's GUI window"),
        P("continuous_clock", False, "Keep /clock and stamps running on across resets "
          "(a reset adds the elapsed sim time to an offset) instead of restarting at 0; for "
          "graphs whose nodes must never see time jump back (the fetch graph)"),
        P("ground_truth_namespace", "sim_ground_truth", "Namespace of the sim-only ground-truth topics"),
        P("wall_clock", False, "Stamp messages with the system clock and publish no /clock, as a robot's "
          "drivers do (realtime mode only): for a graph run with use_sim_time false"),
        P("simulation_interfaces", True, "Serve the ROS 2 standard simulation services (simulation_interfaces) "
          "beside the bridge's own; false leaves them out (each service adds ~2 us to every wait of a lockstep "
          "bridge's fast lane: an estimated 2-4 % of the ~/step rate for the eleven)"),
        P("simulation_interfaces_prefix", "~", "Where the ROS 2 standard simulation services "
          "(simulation_interfaces: step_simulation, reset_simulation, get_entity_state, ...) are served: '~' "
          "under the bridge's name (/sim_bridge/step_simulation), '/' at the root (/step_simulation, as Isaac "
          "Sim names them), '' in the node's namespace, or a prefix such as /gzserver (as Gazebo names them)"),
    ]


def depth_noise(v: Dict[str, Any]) -> DepthNoise:
    """The camera noise model from the parameter values (``enabled`` from ``depth_noise``)."""
    return DepthNoise(enabled=v["depth_noise"], k_z2=v["depth_noise_k"], sigma_0=v["depth_noise_sigma0"],
                      dropout=v["depth_noise_dropout"], rgb_sigma=v["rgb_noise_std"])


def odometry_errors(v: Dict[str, Any]) -> OdometryErrors:
    """The wheel odometry's errors from the ``odom_*`` parameter values."""
    return OdometryErrors(left_radius_scale=v["odom_left_radius_scale"],
                          right_radius_scale=v["odom_right_radius_scale"], track_scale=v["odom_track_scale"],
                          slip_xx=v["odom_slip_xx"], slip_thth=v["odom_slip_thth"], slip_ths=v["odom_slip_ths"],
                          yaw_bias=v["odom_yaw_bias"], gyro=v["odom_gyro"], gyro_noise=v["odom_gyro_noise"])
