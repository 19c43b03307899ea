"""batch_bridge: N simulator instances of one scene in one process, stepped per service call.

A thin adapter over :class:`rlstack_sim.batch.BatchSims`: ``~/step`` (``rlstack_interfaces/SimStepBatch``)
carries the commands of all N envs (and per-env resets, and auto-resets of envs whose episode
ends in the call, as a VecEnv does) and answers with all N states as flat arrays, so a vectorised
training env over ROS (``rlstack_learning.ros.batch_env``) pays one round trip per batch step.
Always lockstep: nothing advances between calls, and nothing is published per step (diagnostics
once a second). See docs/reference/sim-bridge.md ("Batched lockstep").
"""

from __future__ import annotations

import sys
import time
from typing import List, Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_interfaces.srv import SimStepBatch
from rlstack_sim.batch import BatchSims
from rlstack_sim.batch_parameters import batch_bridge_parameters
from rlstack_sim.config import ConfigError, RateMeter, check_choice, steps_per_control


class BatchBridge(Node):
    def __init__(self) -> None:
        super().__init__("batch_bridge")
        from sim_bridges import backend_names, scene_names

        v = declare_all(self, batch_bridge_parameters(scene_names(), backend_names()))
        scene, backend, num_envs, seed, reset_mode = v.scene, v.backend, v.num_envs, v.seed, v.reset_mode
        physics_rate, control_rate, timeout = v.physics_rate_hz, v.control_rate_hz, v.command_timeout_s
        limits = [v.max_linear_speed, v.max_angular_speed, v.max_linear_accel, v.max_angular_accel]
        max_ee_step = v.max_ee_step
        self.with_objects = v.with_objects
        check_choice("reset_mode", reset_mode, ("rebuild", "snapshot"))
        check_choice("scene", scene, scene_names())
        check_choice("backend", backend, backend_names())
        steps_per_control(physics_rate, control_rate)
        log = self.get_logger()
        self.scene, self.control_rate = scene, control_rate
        self.sims = BatchSims(backend, scene, num_envs, seed, physics_rate, control_rate, timeout, max_ee_step,
                              limits, log.info, log.warning, reset_mode)
        self.calls = RateMeter()
        self.steps = RateMeter()
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(SimStepBatch, "~/step", self._on_step)
        self.create_timer(1.0, self._publish_diagnostics, clock=RosClock(clock_type=ClockType.STEADY_TIME))
        log.info(f"{num_envs} x scene '{scene}' on {backend}: lockstep, physics {physics_rate:g} Hz, control "
                 f"{control_rate:g} Hz, command topics in the request: {', '.join(self.sims.channels)}")

    def _on_step(self, request: SimStepBatch.Request, response: SimStepBatch.Response) -> SimStepBatch.Response:
        failed = self.sims.step(int(request.steps), list(request.command_topics), request.command_values,
                                request.reset_seeds, request.auto_reset_seeds, request.end_episode,
                                list(request.end_joints), request.end_abs_limits)
        self.calls.tick()
        n_stepped = self.sims.num_envs - sum(1 for s in request.reset_seeds if s >= 0)
        self.steps.tick(int(request.steps) * n_stepped)
        s = self.sims.state(self.with_objects)
        response.success, response.message = not failed, failed
        response.sim_time = s.sim_time
        response.commands_received = s.commands_received
        response.joint_names = s.joint_names
        response.joint_position = s.joint_position.ravel()
        response.joint_velocity = s.joint_velocity.ravel()
        response.joint_effort = s.joint_effort.ravel()
        response.object_names = s.object_names
        response.object_position = s.object_position.ravel()
        response.object_orientation = s.object_orientation.ravel()
        response.auto_reset = s.auto_reset.tolist()
        if s.reset is not None:
            response.reset_joint_position = s.reset.joint_position.ravel()
            response.reset_joint_velocity = s.reset.joint_velocity.ravel()
            response.reset_joint_effort = s.reset.joint_effort.ravel()
            response.reset_object_position = s.reset.object_position.ravel()
            response.reset_object_orientation = s.reset.object_orientation.ravel()
        return response

    def _publish_diagnostics(self) -> None:
        now = time.monotonic()
        values = {"scene": self.scene, "num_envs": str(self.sims.num_envs), "control_rate_hz": f"{self.control_rate:g}",
                  "step_calls_per_s": f"{self.calls.sample(now):.1f}",
                  "env_steps_per_s": f"{self.steps.sample(now):.1f}",
                  "rejected_total": str(sum(h.rejects.total for h in self.sims.handlers)),
                  "watchdog_timeouts": str(sum(h.watchdog.timeouts for h in self.sims.handlers))}
        status = DiagnosticStatus(level=DiagnosticStatus.OK, name="batch_bridge: simulation",
                                  message=f"lockstep, {self.sims.num_envs} envs", hardware_id=f"sim:{self.scene}",
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        self.diag_pub.publish(DiagnosticArray(status=[status]))

    def use_fast_lane(self) -> bool:
        """Always lockstep: ``~/step`` and the parameter services spin on ``rlstack_common.fast_lane``."""
        return True

    def destroy_node(self) -> None:
        self.sims.close()
        super().destroy_node()


def main(args: Optional[List[str]] = None) -> int:
    try:
        return run_node(BatchBridge, args)
    except ConfigError as exc:
        print(f"batch_bridge: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
