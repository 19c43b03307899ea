"""sim_bridge speaks the ROS 2 standard simulation interface (simulation_interfaces).

The PyBullet and the MuJoCo bridge, each a real process on its own ROS domain, are driven through
the standard services only (reset, set/get entity state, step, spawn, delete) and through our
extension (~/reset, ~/step), and both paths observe the same states. Bad input gets the standard's
result codes with a message; the bridge keeps serving.
"""

from __future__ import annotations

import math

import pytest
from geometry_msgs.msg import Pose
from sensor_msgs.msg import JointState
from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures
from simulation_interfaces.srv import (
    DeleteEntity,
    GetEntities,
    GetEntityState,
    GetSimulationState,
    GetSimulatorFeatures,
    GetSpawnables,
    ResetSimulation,
    SetEntityState,
    SetSimulationState,
    SpawnEntity,
    StepSimulation,
)

from rlstack_interfaces.srv import ResetSim, SimStep

PERIOD_NS = round(1e9 / 60.0)
OK = Result.RESULT_OK


def start_bridge(ros_processes, params_dir, **params):
    return ros_processes.start_node("rlstack_sim", "sim_bridge", params_file=params_dir / "sim_bridge.yaml",
                                    params=params)


def ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def pose_tuple(p: Pose):
    return (p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y, p.orientation.z,
            p.orientation.w)


class Std:
    """The standard services of one bridge, called by their standard types."""

    def __init__(self, probe, prefix: str = "/sim_bridge") -> None:
        self.probe, self.prefix = probe, prefix

    def __call__(self, srv_type, name, **fields):
        return self.probe.call(srv_type, f"{self.prefix}/{name}", srv_type.Request(**fields))

    def entity(self, name):
        return self(GetEntityState, "get_entity_state", entity=name)

    def step(self, n):
        return self(StepSimulation, "step_simulation", steps=n).result

    def set_pose(self, name, pose: Pose, **flags):
        req = SetEntityState.Request(entity=name, set_pose=True, **flags)
        req.state.pose = pose
        return self.probe.call(SetEntityState, f"{self.prefix}/set_entity_state", req).result

    def spawn(self, name, uri, pose: Pose, allow_renaming=False, namespace=""):
        req = SpawnEntity.Request(name=name, allow_renaming=allow_renaming, entity_namespace=namespace)
        req.entity_resource.uri = uri
        req.initial_pose.pose = pose
        return self.probe.call(SpawnEntity, f"{self.prefix}/spawn_entity", req)


def lifted(p: Pose, dx=0.0, dy=0.0, dz=0.0) -> Pose:
    out = Pose()
    out.position.x, out.position.y, out.position.z = p.position.x + dx, p.position.y + dy, p.position.z + dz
    out.orientation = p.orientation
    return out


@pytest.mark.parametrize("backend", ["pybullet", "mujoco"])
def test_standard_services_and_extension_observe_the_same_states(ros_processes, ros_probe, params_dir, backend):
    start_bridge(ros_processes, params_dir, scene="panda_table", backend=backend, mode="lockstep",
                 camera_enabled=False, seed=0)
    std = Std(ros_probe)
    features = ros_probe.call(GetSimulatorFeatures, "/sim_bridge/get_simulator_features",
                              GetSimulatorFeatures.Request()).features
    for f in (SimulatorFeatures.STEP_SIMULATION_MULTIPLE, SimulatorFeatures.SPAWNING, SimulatorFeatures.DELETING,
              SimulatorFeatures.ENTITY_STATE_GETTING, SimulatorFeatures.ENTITY_STATE_SETTING):
        assert f in features.features
    assert std(GetSimulationState, "get_simulation_state").state.state == SimulationState.STATE_PAUSED
    names = std(GetEntities, "get_entities").entities
    assert "red_cube" in names

    # -- standard path: reset (the first standard reset uses the bridge's seed), lift the cube, step
    joints_q = ros_probe.subscribe("/joint_states", JointState)
    ros_probe.wait_for_publishers("/joint_states")
    assert std(ResetSimulation, "reset_simulation").result.result == OK
    cube0 = std.entity("red_cube").state.pose
    drop = lifted(cube0, dz=0.05)
    assert std.set_pose("red_cube", drop).result == OK
    assert std.step(20).result == OK
    standard = {n: pose_tuple(std.entity(n).state.pose) for n in names}
    now = ns(std.entity("red_cube").state.header.stamp)   # the bridge's clock (continuous across resets)
    ros_probe.spin_until(lambda: any(ns(m.header.stamp) == now for m in joints_q.messages), 10,
                         "/joint_states after 20 steps")
    standard_joints = next(m for m in joints_q.messages if ns(m.header.stamp) == now)

    # -- extension path: the same reset and layout through ~/reset, 20 steps through ~/step
    reply = ros_probe.call(ResetSim, "/sim_bridge/reset",
                           ResetSim.Request(seed=0, object_names=["red_cube"], object_poses=[drop]))
    assert reply.success, reply.message
    step = ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=20, with_objects=True))
    assert step.success
    extension = dict(zip(step.object_names, (pose_tuple(p) for p in step.object_poses)))
    assert set(extension) == set(standard)
    for name in names:
        assert extension[name] == pytest.approx(standard[name], abs=1e-9), name
    assert list(step.joint_state.position) == pytest.approx(list(standard_joints.position), abs=1e-9)
    assert standard["red_cube"][2] < drop.position.z - 0.01   # it fell

    # -- spawn, step, move, delete through the standard services
    spawnables = std(GetSpawnables, "get_spawnables").spawnables
    assert "rlstack://objects/cube" in [s.entity_resource.uri for s in spawnables]
    spawned = std.spawn("spare", "rlstack://objects/cube", lifted(cube0, dy=0.12, dz=0.05))
    assert spawned.result.result == OK and spawned.entity_name == "spare", spawned.result.error_message
    assert std.step(60).result == OK
    rest = std.entity("spare").state
    assert abs(rest.pose.position.z - cube0.position.z) < 0.01 and rest.header.frame_id == "world"
    assert std.set_pose("spare", lifted(cube0, dy=0.2)).result == OK
    assert std.entity("spare").state.pose.position.y == pytest.approx(cube0.position.y + 0.2, abs=1e-9)
    assert std(DeleteEntity, "delete_entity", entity="spare").result.result == OK
    assert "spare" not in std(GetEntities, "get_entities").entities

    # -- bad input: the standard's codes, with a message; the bridge keeps serving
    def refused(result, code):
        assert result.result == code and result.error_message, (result.result, result.error_message)

    refused(std.entity("no_such_thing").result, Result.RESULT_NOT_FOUND)
    nan_pose = lifted(cube0)
    nan_pose.position.x = math.nan
    refused(std.set_pose("red_cube", nan_pose), SetEntityState.Response.INVALID_POSE)
    refused(std.spawn("a", "rlstack://objects/spaceship", cube0).result, Result.RESULT_NOT_FOUND)
    refused(std.spawn("b", "model://robot.sdf", cube0).result, SpawnEntity.Response.UNSUPPORTED_FORMAT)
    refused(std.spawn("red_cube", "rlstack://objects/cube", cube0).result, SpawnEntity.Response.NAME_NOT_UNIQUE)
    refused(std.spawn("c", "rlstack://objects/cube", nan_pose).result, SpawnEntity.Response.INVALID_POSE)
    renamed = std.spawn("red_cube", "cube", lifted(cube0, dx=-0.1, dz=0.05), allow_renaming=True)
    assert renamed.result.result == OK and renamed.entity_name == "red_cube_1"
    refused(std(DeleteEntity, "delete_entity", entity="nope").result, Result.RESULT_NOT_FOUND)
    refused(std(ResetSimulation, "reset_simulation", scope=ResetSimulation.Request.SCOPE_TIME).result,
            Result.RESULT_FEATURE_UNSUPPORTED)
    playing = SetSimulationState.Request()
    playing.state.state = SimulationState.STATE_PLAYING
    refused(ros_probe.call(SetSimulationState, "/sim_bridge/set_simulation_state", playing).result,
            Result.RESULT_FEATURE_UNSUPPORTED)
    # a standard reset restores the scene as loaded: the spawned cube is gone
    assert std(ResetSimulation, "reset_simulation").result.result == OK
    assert "red_cube_1" not in std(GetEntities, "get_entities").entities
    assert std.step(1).result == OK


def test_realtime_bridge_steps_only_while_paused(ros_processes, ros_probe, params_dir):
    """Realtime mode is the standard's 'playing': StepSimulation is refused until SetSimulationState
    pauses it; paused, each step is one control period. Served at the root (prefix '/', as Isaac Sim names them)."""
    start_bridge(ros_processes, params_dir, scene="cartpole", mode="realtime", camera_enabled=False,
                 simulation_interfaces_prefix="/")
    std = Std(ros_probe, prefix="")
    assert std(GetSimulationState, "get_simulation_state").state.state == SimulationState.STATE_PLAYING
    refused = std.step(1)
    assert refused.result == Result.RESULT_INCORRECT_STATE and "pause" in refused.error_message
    pause = SetSimulationState.Request()
    pause.state.state = SimulationState.STATE_PAUSED
    assert ros_probe.call(SetSimulationState, "/set_simulation_state", pause).result.result == OK
    assert std(GetSimulationState, "get_simulation_state").state.state == SimulationState.STATE_PAUSED
    assert ros_probe.call(SetSimulationState, "/set_simulation_state", pause).result.result == \
        SetSimulationState.Response.ALREADY_IN_TARGET_STATE
    sim_now = lambda: ns(std.entity("cart").state.header.stamp)  # noqa: E731 - sim time of the answer
    before = sim_now()
    ros_probe.spin_for(0.3)   # paused: sim time stands still
    assert sim_now() == before
    assert std.step(7).result == OK
    assert abs(sim_now() - (before + 7 * 1e9 / 60.0)) < 2
    entities = std(GetEntities, "get_entities").entities
    assert "cart" in entities
    refused_delete = std(DeleteEntity, "delete_entity", entity="cart").result
    assert refused_delete.result == Result.RESULT_OPERATION_FAILED and "robot" in refused_delete.error_message


def test_lockstep_env_trains_through_the_standard_services_only(ros_processes, params_dir, ros_domain_id):
    """LockstepEnv(transport='standard'): ResetSimulation, StepSimulation and the topics only. The
    bridge's n-th standard reset uses seed + n, so its episodes equal the in-process env's episodes
    of those seeds (observations within 1e-5, rewards and ends exactly); then PPO trains a few
    hundred steps through it."""
    import gymnasium as gym
    import numpy as np
    import rclpy
    from stable_baselines3 import PPO

    import rlstack_learning  # noqa: F401  (registers the envs)
    from rlstack_learning.ros.lockstep_env import LockstepEnv

    seed = 4242
    start_bridge(ros_processes, params_dir, scene="cartpole", mode="lockstep", camera_enabled=False, seed=seed,
                 control_rate_hz=60.0, publish_rate_hz=60.0, ground_truth_rate_hz=60.0)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ros_domain_id)
    node = rclpy.create_node("standard_client", context=ctx)
    env = LockstepEnv("RlStack/CartPole-v0", node, transport="standard", timeout_s=20.0)
    local = gym.make("RlStack/CartPole-v0").unwrapped
    try:
        rng, worst, compared = np.random.default_rng(3), 0.0, 0
        for k in range(2):
            o_std, info = env.reset(seed=123)   # the seed cannot travel through the standard
            assert info["episode_seed"] is None
            o_loc, _ = local.reset(seed=seed + k)
            worst = max(worst, float(np.max(np.abs(o_std - o_loc))))
            for _ in range(120):
                a = rng.uniform(-1, 1, 1).astype(np.float32)
                o_std, r_std, te_std, tr_std, _ = env.step(a)
                o_loc, r_loc, te_loc, tr_loc, _ = local.step(a)
                worst, compared = max(worst, float(np.max(np.abs(o_std - o_loc)))), compared + 1
                assert r_std == r_loc and (te_std, tr_std) == (te_loc, tr_loc)
                if te_std or tr_std:
                    break
        assert worst <= 1e-5 and compared > 40, (worst, compared)
        model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=384)
        assert model.num_timesteps >= 384
        obs, _ = env.reset()
        action, _ = model.predict(obs, deterministic=True)
        assert env.action_space.contains(action)
    finally:
        env.close()
        local.close()
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_standard_services_can_be_left_out(ros_processes, ros_probe, params_dir):
    """simulation_interfaces:=false: the bridge serves only its own services."""
    start_bridge(ros_processes, params_dir, scene="cartpole", mode="lockstep", camera_enabled=False,
                 simulation_interfaces=False)
    assert ros_probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=1)).success
    names = {name for name, _ in ros_probe.node.get_service_names_and_types_by_node("sim_bridge", "/")}
    assert "/sim_bridge/step" in names and "/sim_bridge/reset" in names
    assert not any(n.endswith(("step_simulation", "reset_simulation", "get_entity_state")) for n in names), names
