"""The bridge's ROS 2 standard simulation services (``simulation_interfaces``), beside its own.

:func:`attach` adds to a :class:`rlstack_sim.bridge_node.SimBridge` the standard services a tool
written for Gazebo, Isaac Sim or O3DE calls: GetSimulatorFeatures, GetSimulationState,
SetSimulationState, StepSimulation, ResetSimulation, GetEntities, GetEntityState, SetEntityState,
GetSpawnables, SpawnEntity and DeleteEntity. They are named ``<prefix>/<snake_case name>``
(``~/step_simulation``, ...), ``prefix`` being the bridge's ``simulation_interfaces_prefix`` parameter.
The logic (name, pose and result-code mapping) is in :mod:`rlstack_sim.sim_interfaces_core`;
this module only converts messages and calls the bridge. docs/reference/simulation-interfaces.md
has the mapping.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from rlstack_sim import sim_interfaces_core as core

_SERVICES = {
    "get_simulator_features": "GetSimulatorFeatures", "get_simulation_state": "GetSimulationState",
    "set_simulation_state": "SetSimulationState", "step_simulation": "StepSimulation",
    "reset_simulation": "ResetSimulation", "get_entities": "GetEntities", "get_entity_state": "GetEntityState",
    "set_entity_state": "SetEntityState", "get_spawnables": "GetSpawnables", "spawn_entity": "SpawnEntity",
    "delete_entity": "DeleteEntity",
}


def service_name(prefix: str, name: str) -> str:
    """``~`` -> ``~/name`` (private), ``''`` -> ``name`` (the node's namespace), ``/`` -> ``/name``,
    ``/ns`` -> ``/ns/name``."""
    if prefix == "/":
        return f"/{name}"
    prefix = prefix.rstrip("/")
    return f"{prefix}/{name}" if prefix else name


class StandardServices:
    """The standard services of one bridge node (``bridge``: a SimBridge)."""

    def __init__(self, bridge) -> None:
        import simulation_interfaces.srv as srv

        self.bridge = bridge
        prefix = bridge.get_parameter("simulation_interfaces_prefix").value   # rlstack_sim.parameters
        self.base_seed = int(bridge.get_parameter("seed").value)
        self.resets = 0
        self._robot_parts: Dict[str, frozenset] = {}
        for name, type_name in _SERVICES.items():
            bridge.create_service(getattr(srv, type_name), service_name(prefix, name), getattr(self, f"_{name}"))

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _result(response, outcome: core.Outcome):
        response.result.result = outcome.code
        response.result.error_message = outcome.message
        return response

    def _paused(self) -> bool:
        return self.bridge.stepper.paused

    def _truth(self):
        return self.bridge.sim.ground_truth()

    def _robot_part_names(self) -> frozenset:
        scene = self.bridge.scene
        if scene not in self._robot_parts:
            from sim_bridges import make_scene

            spec = make_scene(scene)
            self._robot_parts[scene] = frozenset(n for r in spec.robots for n in r.link_objects)
        return self._robot_parts[scene]

    def _free_objects(self, names) -> List[str]:
        parts = self._robot_part_names()
        return [n for n in names if n not in parts]

    def _reset(self) -> str:
        """A bridge reset (the ~/reset service's path) with the next seed; '' or why it failed."""
        from rlstack_interfaces.srv import ResetSim

        seed = core.reset_seed(self.base_seed, self.resets)
        self.resets += 1
        out = self.bridge._on_reset(ResetSim.Request(seed=seed), ResetSim.Response())
        return "" if out.success else out.message

    # ------------------------------------------------------------------ simulation
    def _get_simulator_features(self, request, response):
        response.features.features = list(core.FEATURES)
        response.features.spawn_formats = [core.SPAWN_FORMAT]
        response.features.custom_info = (
            "rlstack sim_bridge: one step = one control period; entities = the scene's ground-truth objects; "
            "spawnable = the scene's object kinds (rlstack://objects/<kind>); see "
            "docs/reference/simulation-interfaces.md. Extension (not standard): rlstack_interfaces/srv/SimStep "
            "(~/step: commands in the step request) and SimStepBatch (N worlds per call).")
        return response

    def _get_simulation_state(self, request, response):
        response.state.state = core.simulation_state(self.bridge.mode, self._paused())
        return self._result(response, core.OK)

    def _set_simulation_state(self, request, response):
        outcome, action = core.plan_state_change(self.bridge.mode, self._paused(), int(request.state.state))
        if action == "stop":
            failed = self._reset()
            if failed:
                return self._result(response, core.Outcome(core.STATE_TRANSITION_ERROR, failed))
            if not core.lockstep_like(self.bridge.mode):
                self.bridge.stepper.set_paused(True)
        elif action in ("pause", "play"):
            self.bridge.stepper.set_paused(action == "pause")
        return self._result(response, outcome)

    def _step_simulation(self, request, response):
        b = self.bridge
        steps = int(request.steps)
        outcome = core.check_step(b.mode, self._paused(), steps)
        if outcome.ok and steps > 0:
            b.stepper.run(steps, b._publish_due, publish_inside=b.camera_in_lockstep)
            b._publish_due()
            b.meters["step_calls"].tick()
        return self._result(response, outcome)

    def _reset_simulation(self, request, response):
        outcome = core.check_reset_scope(int(request.scope))
        if outcome.ok:
            failed = self._reset()
            if failed:
                outcome = core.Outcome(core.RESULT_OPERATION_FAILED, failed)
        return self._result(response, outcome)

    # ------------------------------------------------------------------ entities
    def _get_entities(self, request, response):
        f = request.filters
        has_bounds = bool(len(f.bounds.points)) or f.bounds.type != 0
        outcome, names = core.filter_entities(self._truth(), f.filter, len(f.categories), bool(len(f.tags.tags)),
                                              has_bounds)
        response.entities = names
        return self._result(response, outcome)

    def _get_entity_state(self, request, response):
        truth = self._truth()
        outcome = core.lookup_entity(truth, request.entity)
        if outcome.ok:
            obj, st = truth[request.entity], response.state
            st.header.frame_id = self.bridge.gt_frame
            st.header.stamp = self.bridge._stamp()
            p, q = obj.pose.position, obj.pose.orientation
            st.pose.position.x, st.pose.position.y, st.pose.position.z = (float(v) for v in p)
            st.pose.orientation.x, st.pose.orientation.y, st.pose.orientation.z, st.pose.orientation.w = (
                float(v) for v in q)
            lin, ang = obj.velocity.linear, obj.velocity.angular
            st.twist.linear.x, st.twist.linear.y, st.twist.linear.z = (float(v) for v in lin)
            st.twist.angular.x, st.twist.angular.y, st.twist.angular.z = (float(v) for v in ang)
        return self._result(response, outcome)

    def _set_entity_state(self, request, response):
        from sim_bridges.contract import Pose

        truth = self._truth()
        st = request.state
        position, orientation = _position(st.pose.position), _quaternion(st.pose.orientation)
        twist = _vec(st.twist.linear) + _vec(st.twist.angular)
        accel = _vec(st.acceleration.linear) + _vec(st.acceleration.angular)
        outcome = core.check_set_entity_state(
            truth, self._free_objects(truth), request.entity, st.header.frame_id, self.bridge.gt_frame,
            request.set_pose, position, orientation, request.set_twist, twist, request.set_acceleration, accel)
        if outcome.ok and request.set_pose:
            try:
                self.bridge.sim.set_object_pose(request.entity, Pose(position, orientation))
            except (ValueError, NotImplementedError) as exc:
                outcome = core.Outcome(core.RESULT_OPERATION_FAILED, str(exc))
        return self._result(response, outcome)

    def _get_spawnables(self, request, response):
        from simulation_interfaces.msg import Spawnable

        sim = self.bridge.sim
        kinds = sim.spawnable_kinds()
        truth = self._truth()
        templates = {}
        for kind in kinds:   # describe each kind by an object of it that is in the scene now
            obj = next((o for o in truth.values() if o.kind == kind), None)
            templates[kind] = (obj.shape, obj.size, obj.color_name) if obj else ("object", (), "")
        for uri, description in core.spawnable_descriptions(templates):
            item = Spawnable(description=description)
            item.entity_resource.uri = uri
            response.spawnables.append(item)
        message = "sources are ignored: the scene's own object kinds are spawnable" if len(request.sources) else ""
        return self._result(response, core.Outcome(core.RESULT_OK, message))

    def _spawn_entity(self, request, response):
        from sim_bridges.contract import Pose

        sim, ps = self.bridge.sim, request.initial_pose
        position, orientation = _position(ps.pose.position), _quaternion(ps.pose.orientation)
        outcome, name, kind = core.plan_spawn(
            request.name, request.allow_renaming, request.entity_resource.uri, request.entity_resource.resource_string,
            request.entity_namespace, ps.header.frame_id, self.bridge.gt_frame, position, orientation,
            self._truth(), sim.spawnable_kinds())
        if outcome.ok:
            try:
                sim.spawn_object(name, kind, Pose(position, orientation))
                response.entity_name = name
            except (ValueError, NotImplementedError) as exc:
                outcome = core.Outcome(core.RESULT_OPERATION_FAILED, str(exc))
        return self._result(response, outcome)

    def _delete_entity(self, request, response):
        truth = self._truth()
        outcome = core.check_delete(truth, self._free_objects(truth), request.entity)
        if outcome.ok:
            try:
                self.bridge.sim.delete_object(request.entity)
            except (ValueError, NotImplementedError) as exc:
                outcome = core.Outcome(core.RESULT_OPERATION_FAILED, str(exc))
        return self._result(response, outcome)


def _vec(v) -> List[float]:
    return [float(v.x), float(v.y), float(v.z)]


def _position(p) -> List[float]:
    return _vec(p)


def _quaternion(q) -> List[float]:
    return [float(q.x), float(q.y), float(q.z), float(q.w)]


def attach(bridge) -> Optional[StandardServices]:
    """Serve the standard services on ``bridge`` (call once its scene is loaded), unless its
    ``simulation_interfaces`` parameter is false (then ``None``)."""
    if not bridge.get_parameter("simulation_interfaces").value:
        return None
    return StandardServices(bridge)
