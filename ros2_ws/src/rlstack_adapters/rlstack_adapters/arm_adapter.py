"""arm_adapter: rlstack's arm commands -> a real arm's standard cartesian and gripper interfaces.

Subscribes ``ee_delta_topic`` (geometry_msgs/Vector3, /arm/ee_delta: the grasp point's step, m,
in the arm base frame, one per control period), ``gripper_topic`` (std_msgs/Bool, /arm/gripper:
true open) and ``estop_topic`` (std_msgs/Bool, /estop).
Publishes ``twist_topic`` (geometry_msgs/TwistStamped in ``frame_id``: MoveIt Servo's
``/servo_node/delta_twist_cmds``, which does the IK and drives a joint trajectory controller,
or a cartesian velocity controller's command) and the gripper goal on one of:
  * ``gripper_interface: topic``  std_msgs/Float64MultiArray on ``gripper_command_topic``
    (ros2_control's forward_command_controller / JointGroupPositionController ``~/commands``:
    ``gripper_joint_count`` positions), available everywhere;
  * ``gripper_interface: action`` control_msgs/action/GripperCommand on ``gripper_action``
    (the Franka Hand's ``/franka_gripper/gripper_action``, ros2_control's
    GripperActionController). control_msgs is in every ROS 2 distribution but not on PyPI:
    with the PyPI wheels this mode stops at start with a one-line error.
Publishes /diagnostics. All logic is in ``rlstack_adapters.core`` (docs/guides/deploy-on-a-robot.md).
"""

from __future__ import annotations

import sys
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped, Vector3
from rclpy.node import Node
from std_msgs.msg import Bool, Float64, Float64MultiArray

from rlstack_adapters.core import ArmAdapterConfig, ArmAdapterCore, ArmCommand, GripperConfig, GripperCore, GripperGoal
from rlstack_adapters.parameters import ARM_ADAPTER
from rlstack_common import run_node
from rlstack_common.param_table import declare_all


class ConfigError(RuntimeError):
    """A parameter combination the node cannot run with (one line for the user)."""


class ArmAdapter(Node):
    def __init__(self) -> None:
        super().__init__("arm_adapter")
        v = declare_all(self, ARM_ADAPTER)
        self.frame_id, self.gripper_interface = v.frame_id, v.gripper_interface
        self.gripper_joint_count = v.gripper_joint_count
        arm = ArmAdapterConfig(step_period_s=v.step_period_s, max_ee_step=v.max_ee_step,
                               max_linear_speed=v.max_linear_speed, command_timeout_s=v.command_timeout_s,
                               max_angular_speed=v.max_angular_speed)
        grip = GripperConfig(open_position=v.open_position, closed_position=v.closed_position,
                             max_effort=v.max_effort, resend_period_s=v.resend_period_s)

        if self.gripper_interface not in ("topic", "action"):
            raise ConfigError(f"gripper_interface '{self.gripper_interface}' is unknown: use 'topic' or 'action'")
        self.arm = ArmAdapterCore(arm)
        self.gripper = GripperCore(grip)
        self.twist_pub = self.create_publisher(TwistStamped, v.twist_topic, 10)
        self.gripper_pub = None
        self.gripper_client = None
        self.gripper_action_type = None
        if self.gripper_interface == "topic":
            self.gripper_pub = self.create_publisher(Float64MultiArray, v.gripper_command_topic, 10)
        else:
            try:
                from control_msgs.action import GripperCommand  # a ROS distribution has it; PyPI does not
            except ImportError:
                raise ConfigError(
                    "gripper_interface 'action' needs control_msgs (in every ROS 2 distribution, not on PyPI): "
                    "source a ROS distribution, or use gripper_interface:=topic") from None
            from rclpy.action import ActionClient
            self.gripper_action_type = GripperCommand
            self.gripper_client = ActionClient(self, GripperCommand, v.gripper_action)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Vector3, v.ee_delta_topic, self.on_ee_delta, 10)
        self.create_subscription(Float64, v.ee_yaw_topic, self.on_ee_yaw, 10)
        self.create_subscription(Bool, v.gripper_topic, self.on_gripper, 10)
        self.create_subscription(Bool, v.estop_topic, self.on_estop, 10)
        self.create_timer(v.watchdog_period_s, self.on_tick)
        self.create_timer(v.diagnostics_period_s, self.publish_diagnostics)
        self.gripper_unavailable = 0
        self.get_logger().info(
            f"{v.ee_delta_topic} -> {v.twist_topic} (TwistStamped in {self.frame_id}); {v.gripper_topic} -> "
            + (v.gripper_command_topic if self.gripper_pub else f"{v.gripper_action} (GripperCommand action)"))

    # ------------------------------------------------------------------ arm
    def on_ee_delta(self, msg: Vector3) -> None:
        cmd = self.arm.on_ee_delta(msg.x, msg.y, msg.z, time.monotonic())
        if cmd is None:
            self.get_logger().warning("rejected a non-finite /arm/ee_delta step", throttle_duration_sec=5.0)
            return
        self.publish_twist(cmd)

    def on_ee_yaw(self, msg: Float64) -> None:
        if not self.arm.on_ee_yaw(msg.data):
            self.get_logger().warning(f"rejected /arm/ee_yaw {msg.data} (finite, |yaw| <= pi/2 rad)",
                                      throttle_duration_sec=5.0)

    def on_tick(self) -> None:
        cmd = self.arm.on_tick(time.monotonic())
        if cmd is not None:
            if cmd.reason == "timeout":
                self.get_logger().warning("end-effector steps stopped: arm stopped (zero twist)",
                                          throttle_duration_sec=5.0)
            self.publish_twist(cmd)

    def on_estop(self, msg: Bool) -> None:
        cmd = self.arm.set_estop(msg.data)
        if cmd is not None:
            self.get_logger().error("e-stop asserted: arm stopped, steps dropped until it is released")
            self.publish_twist(cmd)

    def publish_twist(self, cmd: ArmCommand) -> None:
        out = TwistStamped()
        out.header.stamp = self.get_clock().now().to_msg()
        out.header.frame_id = self.frame_id
        out.twist.linear.x, out.twist.linear.y, out.twist.linear.z = cmd.linear
        out.twist.angular.z = cmd.angular_z
        self.twist_pub.publish(out)

    # ------------------------------------------------------------------ gripper
    def on_gripper(self, msg: Bool) -> None:
        goal = self.gripper.on_command(msg.data, time.monotonic())
        if goal is not None:
            self.send_gripper(goal)

    def send_gripper(self, goal: GripperGoal) -> None:
        self.get_logger().info(f"gripper: {'open' if goal.open else 'close'} (position {goal.position:g})")
        if self.gripper_pub is not None:
            self.gripper_pub.publish(Float64MultiArray(data=[float(goal.position)] * self.gripper_joint_count))
            return
        if not self.gripper_client.server_is_ready():
            self.gripper_unavailable += 1
            self.get_logger().error("gripper action server not available: goal not sent", throttle_duration_sec=5.0)
            return
        action_goal = self.gripper_action_type.Goal()
        action_goal.command.position = float(goal.position)
        action_goal.command.max_effort = float(goal.max_effort)
        self.gripper_client.send_goal_async(action_goal)

    # ------------------------------------------------------------------ diagnostics
    def publish_diagnostics(self) -> None:
        st = DiagnosticStatus(name=f"{self.get_name()}: arm adapter", hardware_id=self.frame_id)
        st.level, st.message = DiagnosticStatus.OK, "ok"
        if self.arm.estop:
            st.level, st.message = DiagnosticStatus.ERROR, "e-stop asserted"
        elif self.arm.rejected or self.gripper_unavailable:
            st.level, st.message = DiagnosticStatus.WARN, "rejected input or gripper unavailable"
        values = {
            "steps": self.arm.steps, "clipped_steps": self.arm.clipped_steps, "clipped_speeds": self.arm.clipped_speeds,
            "timeouts": self.arm.timeouts, "estop": "asserted" if self.arm.estop else "clear",
            "gripper": self.gripper.state, "gripper_goals": self.gripper.goals_sent,
            "gripper_unavailable": self.gripper_unavailable,
            **{f"rejected.{k}": v for k, v in self.arm.rejected.items()},
        }
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(arr)


def _factory() -> ArmAdapter:
    try:
        return ArmAdapter()
    except ConfigError as exc:
        print(f"arm_adapter: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main(args=None) -> int:
    return run_node(_factory, args, small_messages=True)


if __name__ == "__main__":
    sys.exit(main())
