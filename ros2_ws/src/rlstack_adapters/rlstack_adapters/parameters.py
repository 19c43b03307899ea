"""The parameter tables of the adapter nodes (pure Python, no rclpy).

Each node declares its table with ``rlstack_common.param_table.declare_all``; ``launch/params/``
and docs/reference/adapters.md are checked against (the docs generated from) these tables.
"""

from __future__ import annotations

from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["ARM_ADAPTER", "CMD_VEL_MUX", "TWIST_STAMPER"]

ARM_ADAPTER: List[P] = [
    P("ee_delta_topic", "/arm/ee_delta", "Input: geometry_msgs/Vector3 end-effector steps, m"),
    P("ee_yaw_topic", "/arm/ee_yaw", "Input: std_msgs/Float64 gripper yaw about the arm base's z, rad (|yaw| <= "
      "pi/2)"),
    P("gripper_topic", "/arm/gripper", "Input: std_msgs/Bool gripper state (true open)"),
    P("estop_topic", "/estop", "Input: std_msgs/Bool e-stop; true stops the arm, steps are dropped while asserted"),
    P("twist_topic", "/servo_node/delta_twist_cmds", "Output: geometry_msgs/TwistStamped cartesian velocity"),
    P("frame_id", "panda_link0", "header.frame_id of the twist: the arm base frame the steps are in"),
    P("step_period_s", 0.05, "The policy's control period: step / period = velocity, s", 0.001, 10.0),
    P("max_ee_step", 0.05, "Longer steps are scaled down to this, m", 0.0001, 1.0),
    P("max_linear_speed", 0.25, "Speed limit of the twist, m/s", 0.001, 5.0),
    P("command_timeout_s", 0.15, "No step for this long while moving: one zero twist, s (wall clock)", 0.01, 60.0),
    P("max_angular_speed", 1.0, "Gripper yaw rate of an /arm/ee_yaw turn (open loop), rad/s", 0.01, 10.0),
    P("gripper_interface", "topic", "How gripper goals go out", constraints="one of: topic, action"),
    P("gripper_command_topic", "/gripper_controller/commands", "Output (topic): std_msgs/Float64MultiArray "
      "positions"),
    P("gripper_joint_count", 1, "Positions per gripper command (topic): one per commanded joint", 1, 8),
    P("gripper_action", "/franka_gripper/gripper_action", "Output (action): control_msgs/action/GripperCommand "
      "server"),
    P("open_position", 0.04, "Gripper position for open, in the driver's unit (Franka Hand: m per finger)",
      -10.0, 10.0),
    P("closed_position", 0.0, "Gripper position for close", -10.0, 10.0),
    P("max_effort", 20.0, "Grasp force of a close goal (action), N; 0: the driver's default", 0.0, 1000.0),
    P("resend_period_s", 1.0, "The same state asked again after this long is re-sent, s (0: never)", 0.0, 3600.0),
    P("watchdog_period_s", 0.02, "Period of the step watchdog check, s", 0.001, 1.0),
    P("diagnostics_period_s", 1.0, "Period of /diagnostics, s", 0.05, 60.0),
]

TWIST_STAMPER: List[P] = [
    P("input_topic", "/cmd_vel", "Input: geometry_msgs/Twist"),
    P("output_topic", "/diff_drive_controller/cmd_vel", "Output: geometry_msgs/TwistStamped"),
    P("frame_id", "base_link", "header.frame_id of the output"),
]

CMD_VEL_MUX: List[P] = [
    P("output_topic", "/cmd_vel", "Output: geometry_msgs/Twist, the only publisher on it"),
    P("input_names", ["mission", "navigation"], "Input names (one per input; used in diagnostics)"),
    P("input_topics", ["/cmd_vel_mission", "/cmd_vel_nav"], "Input topics (geometry_msgs/Twist), one per input "
      "name"),
    P("input_priorities", [20, 10], "Input priorities, one per input, distinct, higher wins",
      constraints="each 1..255"),
    P("input_timeouts", [0.5, 0.5], "Input timeouts, s of the steady clock: an input older than this no longer "
      "wins (0: never stale once it has sent a command)", constraints="each 0..60"),
    P("lock_topic", "", "Lock input (std_msgs/Bool, true = locked); empty: no lock"),
    P("lock_priority", 255, "Inputs with priority up to this are masked while the lock is engaged", 0, 255),
    P("lock_timeout_s", 0.0, "Lock heartbeat, s: with > 0 the lock also engages when no lock message came within "
      "it (0: no heartbeat)", 0.0, 60.0),
    P("stop_on_idle", True, "Send one zero command when no input wins any more (twist_mux sends nothing)"),
    P("check_rate_hz", 20.0, "Rate of the staleness check that sends the idle stop, Hz", 1.0, 200.0),
    P("diagnostics_period_s", 1.0, "Period of /diagnostics, s", 0.05, 60.0),
]
