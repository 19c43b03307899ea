"""rlstack_sim.sim_interfaces_core: the standard services' mapping, without ROS."""

import math

from rlstack_sim import sim_interfaces_core as core
from rlstack_sim.sim_interfaces_server import service_name

Q = (0.0, 0.0, 0.0, 1.0)


def test_codes_and_features_equal_the_standard_definitions():
    from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures
    from simulation_interfaces.srv import ResetSimulation, SetEntityState, SetSimulationState, SpawnEntity

    assert (core.RESULT_FEATURE_UNSUPPORTED, core.RESULT_OK, core.RESULT_NOT_FOUND, core.RESULT_INCORRECT_STATE,
            core.RESULT_OPERATION_FAILED) == (Result.RESULT_FEATURE_UNSUPPORTED, Result.RESULT_OK,
                                              Result.RESULT_NOT_FOUND, Result.RESULT_INCORRECT_STATE,
                                              Result.RESULT_OPERATION_FAILED)
    assert (core.STATE_STOPPED, core.STATE_PLAYING, core.STATE_PAUSED, core.STATE_QUITTING) == (
        SimulationState.STATE_STOPPED, SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED,
        SimulationState.STATE_QUITTING)
    r = SetSimulationState.Response
    assert (core.ALREADY_IN_TARGET_STATE, core.STATE_TRANSITION_ERROR, core.INCORRECT_TRANSITION) == (
        r.ALREADY_IN_TARGET_STATE, r.STATE_TRANSITION_ERROR, r.INCORRECT_TRANSITION)
    assert core.SET_STATE_INVALID_POSE == SetEntityState.Response.INVALID_POSE
    s = SpawnEntity.Response
    assert (core.NAME_NOT_UNIQUE, core.NAME_INVALID, core.UNSUPPORTED_FORMAT, core.NO_RESOURCE,
            core.NAMESPACE_INVALID, core.SPAWN_INVALID_POSE) == (s.NAME_NOT_UNIQUE, s.NAME_INVALID,
                                                                 s.UNSUPPORTED_FORMAT, s.NO_RESOURCE,
                                                                 s.NAMESPACE_INVALID, s.INVALID_POSE)
    rs = ResetSimulation.Request
    assert (core.SCOPE_DEFAULT, core.SCOPE_TIME, core.SCOPE_STATE, core.SCOPE_SPAWNED, core.SCOPE_ALL) == (
        rs.SCOPE_DEFAULT, rs.SCOPE_TIME, rs.SCOPE_STATE, rs.SCOPE_SPAWNED, rs.SCOPE_ALL)
    standard = {v for k, v in vars(SimulatorFeatures).items() if k.isupper() and isinstance(v, int)}
    assert set(core.FEATURES) <= standard


def test_simulation_state_and_transitions():
    assert core.simulation_state("lockstep", False) == core.STATE_PAUSED
    assert core.simulation_state("realtime", False) == core.STATE_PLAYING
    assert core.simulation_state("fast", True) == core.STATE_PAUSED
    assert core.plan_state_change("realtime", False, core.STATE_PAUSED) == (core.OK, "pause")
    assert core.plan_state_change("realtime", True, core.STATE_PLAYING) == (core.OK, "play")
    assert core.plan_state_change("realtime", True, core.STATE_PAUSED)[0].code == core.ALREADY_IN_TARGET_STATE
    assert core.plan_state_change("lockstep", False, core.STATE_STOPPED)[1] == "stop"
    out, action = core.plan_state_change("lockstep", False, core.STATE_PLAYING)
    assert out.code == core.RESULT_FEATURE_UNSUPPORTED and action is None and "lockstep" in out.message
    assert core.plan_state_change("realtime", False, core.STATE_QUITTING)[0].code == core.RESULT_FEATURE_UNSUPPORTED
    assert core.plan_state_change("realtime", False, 77)[0].code == core.INCORRECT_TRANSITION


def test_step_needs_a_paused_simulation():
    assert core.check_step("lockstep", False, 10).ok
    assert core.check_step("realtime", True, 1).ok
    playing = core.check_step("realtime", False, 1)
    assert playing.code == core.RESULT_INCORRECT_STATE and "pause" in playing.message
    assert core.check_step("lockstep", False, core.MAX_STEPS_PER_CALL + 1).code == core.RESULT_OPERATION_FAILED


def test_reset_scopes_and_seeds():
    for scope in (core.SCOPE_DEFAULT, core.SCOPE_ALL, core.SCOPE_TIME | core.SCOPE_STATE | core.SCOPE_SPAWNED):
        assert core.check_reset_scope(scope).ok
    for scope in (core.SCOPE_TIME, core.SCOPE_STATE, core.SCOPE_SPAWNED, core.SCOPE_STATE | core.SCOPE_TIME):
        assert core.check_reset_scope(scope).code == core.RESULT_FEATURE_UNSUPPORTED
    assert [core.reset_seed(7, n) for n in range(3)] == [7, 8, 9]


def test_entity_filters():
    names = ["red_cube", "blue_ball", "cart"]
    assert core.filter_entities(names, "") == (core.OK, ["blue_ball", "cart", "red_cube"])
    assert core.filter_entities(names, "^(red|blue)_") == (core.OK, ["blue_ball", "red_cube"])
    assert core.filter_entities(names, "[")[0].code == core.RESULT_OPERATION_FAILED
    assert core.filter_entities(names, "", n_categories=1)[0].code == core.RESULT_FEATURE_UNSUPPORTED
    assert core.filter_entities(names, "", has_bounds=True)[0].code == core.RESULT_FEATURE_UNSUPPORTED


def _set(entity="red_cube", frame="", set_pose=True, position=(0, 0, 1), orientation=Q, set_twist=False,
         twist=(0,) * 6, set_acc=False, acc=(0,) * 6):
    return core.check_set_entity_state(["red_cube", "cart"], ["red_cube"], entity, frame, "world", set_pose,
                                       position, orientation, set_twist, twist, set_acc, acc)


def test_set_entity_state_checks():
    assert _set().ok
    assert _set(entity="nope").code == core.RESULT_NOT_FOUND
    assert _set(entity="cart").code == core.RESULT_OPERATION_FAILED
    assert _set(frame="base_link").code == core.RESULT_OPERATION_FAILED
    assert _set(frame="world").ok
    assert _set(position=(math.nan, 0, 0)).code == core.SET_STATE_INVALID_POSE
    assert _set(orientation=(0, 0, 0, 2)).code == core.SET_STATE_INVALID_POSE
    assert _set(orientation=(0, 0, 0, math.inf)).code == core.SET_STATE_INVALID_POSE
    assert _set(set_twist=True).ok   # zero twist: at rest, as placed
    assert _set(set_twist=True, twist=(1, 0, 0, 0, 0, 0)).code == core.RESULT_FEATURE_UNSUPPORTED
    assert _set(set_acc=True, acc=(0, 0, math.nan, 0, 0, 0)).code == core.RESULT_FEATURE_UNSUPPORTED


def _spawn(name="spare", uri="rlstack://objects/cube", rs="", namespace="", renaming=False, frame="",
           position=(0, 0, 1), orientation=Q):
    return core.plan_spawn(name, renaming, uri, rs, namespace, frame, "world", position, orientation,
                           ["red_cube", "cube_1"], ["cube", "ball"])


def test_spawn_planning():
    assert _spawn() == (core.OK, "spare", "cube")
    assert _spawn(uri="ball") == (core.OK, "spare", "ball")
    assert _spawn(uri="")[0].code == core.NO_RESOURCE
    assert _spawn(uri="", rs="<sdf/>")[0].code == core.UNSUPPORTED_FORMAT
    assert _spawn(uri="model://robot.sdf")[0].code == core.UNSUPPORTED_FORMAT
    unknown = _spawn(uri="rlstack://objects/spaceship")[0]
    assert unknown.code == core.RESULT_NOT_FOUND and "cube" in unknown.message
    assert _spawn(namespace="robot2")[0].code == core.NAMESPACE_INVALID
    assert _spawn(frame="base_link")[0].code == core.SPAWN_INVALID_POSE
    assert _spawn(position=(0, math.nan, 0))[0].code == core.SPAWN_INVALID_POSE
    assert _spawn(orientation=(0, 0, 0, 0))[0].code == core.SPAWN_INVALID_POSE
    assert _spawn(name="bad name")[0].code == core.NAME_INVALID
    assert _spawn(name="")[0].code == core.NAME_INVALID
    assert _spawn(name="red_cube")[0].code == core.NAME_NOT_UNIQUE
    assert _spawn(name="red_cube", renaming=True) == (core.OK, "red_cube_1", "cube")
    assert _spawn(name="", renaming=True) == (core.OK, "cube_2", "cube")   # cube_1 is taken


def test_delete_and_lookup():
    assert core.check_delete(["red_cube", "cart"], ["red_cube"], "red_cube").ok
    assert core.check_delete(["red_cube", "cart"], ["red_cube"], "cart").code == core.RESULT_OPERATION_FAILED
    missing = core.check_delete(["red_cube"], ["red_cube"], "x")
    assert missing.code == core.RESULT_NOT_FOUND and "red_cube" in missing.message


def test_spawnable_descriptions_and_service_names():
    out = core.spawnable_descriptions({"cube": ("box", (0.04, 0.04, 0.04), "red")})
    assert out == [("rlstack://objects/cube", "cube: red box, 0.04 x 0.04 x 0.04 m (a copy of the scene's cube)")]
    assert service_name("~", "step_simulation") == "~/step_simulation"
    assert service_name("", "step_simulation") == "step_simulation"
    assert service_name("/", "step_simulation") == "/step_simulation"
    assert service_name("/gzserver/", "step_simulation") == "/gzserver/step_simulation"


def test_outcome_ok():
    assert core.Outcome(core.RESULT_OK).ok and not core.Outcome(core.RESULT_NOT_FOUND).ok
