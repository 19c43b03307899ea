"""The sim_bridge's services: ~/reset, ~/move_objects, ~/step, ~/pause (a mixin of the node class).

Request checks and the backend calls are in :mod:`rlstack_sim.core`; these handlers only move
request and response fields. Documented in docs/reference/sim-bridge.md.
"""

from __future__ import annotations

from std_srvs.srv import SetBool

from rlstack_interfaces.srv import MoveObjects, ResetSim, SimStep
from rlstack_sim import convert
from rlstack_sim.core import (
    apply_moves,
    apply_request_commands,
    apply_reset,
    check_object_lists,
    check_reset,
    plan_request_commands,
)

__all__ = ["BridgeServices"]


class BridgeServices:
    """Service callbacks of :class:`rlstack_sim.bridge_node.SimBridge` (they use its sim, stepper,
    commands and stamps)."""

    def _on_reset(self, request: ResetSim.Request, response: ResetSim.Response) -> ResetSim.Response:
        scene = request.scene or self.scene
        names, poses = list(request.object_names), list(request.object_poses)
        refused = check_reset(scene, self._scene_names(), len(names), len(poses))
        if refused:
            response.success, response.message = False, refused
            return response
        if self.continuous_clock:  # the next episode's time starts one period after this one's
            self.clock_offset += self.sim.sim_time + self.period
        objects = [(name, [p.position.x, p.position.y, p.position.z],
                    [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w])
                   for name, p in zip(names, poses)]

        def load(new_scene: str, seed: int) -> None:
            self.sim.load_scene(new_scene, seed=seed)
            self._setup_scene(new_scene)

        failed = apply_reset(self.sim, scene, lambda: self.scene, int(request.seed), objects, load)
        self._after_reset()
        if failed:
            response.success, response.message = False, failed
            return response
        response.success = True
        moved = f", moved {', '.join(names)}" if names else ""
        response.message = f"scene '{scene}' reset with seed {request.seed}{moved}"
        response.sim_time = self._stamp()
        return response

    def _on_move_objects(self, request: MoveObjects.Request, response: MoveObjects.Response) -> MoveObjects.Response:
        """Simulator-only (evaluators, tests, fault injection): place objects now, no reset."""
        names, poses = list(request.object_names), list(request.object_poses)
        refused = check_object_lists(len(names), len(poses))
        if refused:
            response.success, response.message = False, refused
            return response
        failed = apply_moves(self.sim, [(n, [p.position.x, p.position.y, p.position.z],
                                         [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w])
                                        for n, p in zip(names, poses)])
        response.success, response.message = not failed, failed or f"moved {', '.join(names) or 'nothing'}"
        return response

    def _on_step(self, request: SimStep.Request, response: SimStep.Response) -> SimStep.Response:
        if self.mode != "lockstep":
            response.success = False
            response.message = f"the step service only works in lockstep mode (mode is '{self.mode}')"
            return response
        if self.stepper.paused:
            response.success, response.message = False, "paused (call ~/pause with data=false)"
            return response
        if request.command_topics or request.command_values:  # commands carried in the request
            refused, plan = plan_request_commands(list(request.command_topics), len(request.command_values),
                                                  self.commands.channels)
            if refused:
                response.success, response.message = False, refused
                return response
            apply_request_commands(self.commands, plan, request.command_values)
        if request.steps > 0:  # steps = 0: advance nothing, just report (lockstep clients sync on the counter)
            self.stepper.run(int(request.steps), self._publish_due, publish_inside=self.camera_in_lockstep)
            self._publish_due()
        self.meters["step_calls"].tick()
        response.success = True
        response.commands_received = self.commands.commands_received
        response.sim_time = self._stamp()
        if self.sim.joint_names:
            response.joint_state = self._joint_state_msg()
        if self.has_base:
            odom, cov = self._base_odometry()
            response.odom = [convert.odometry_msg(odom, response.sim_time, cov)]
        if request.with_objects:
            response.object_names, response.object_poses = convert.object_poses(self.sim.ground_truth())
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.message = self.stepper.set_paused(bool(request.data))
        response.success = True
        return response
