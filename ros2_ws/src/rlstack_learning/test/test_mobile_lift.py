"""RlStack/MobileLift-v0 (mobile manipulator lift, observed in base_link) and its shipped bundle.

* the io descriptor: base_link frames, /grasp_target PoseStamped fields, safe actions (gripper: hold),
  and policies/mobile_lift/io.yaml equal to what the terms generate; the bundle validates;
* the env's observation equals the declared derive ops applied to independently computed sources
  (the /tf chain base_link -> panda_grasptarget from ``link_transforms()``, the target's pose in
  base_link from PyBullet's own transform functions), also after the base has driven and turned;
* the observation is unchanged when the whole scene (robot, table, cubes) is moved and rotated;
* the scripted expert and the shipped bundle lift the cube on evaluation seeds (a floor, as the
  lift bundle's system test has).
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml

import rlstack_learning  # noqa: F401  (registers the envs)
from rlstack_bundle import derive as ops
from rlstack_learning.envs.mobile_lift import REST_Z, TARGET_Z, MobileLiftEnv

REPO = Path(__file__).resolve().parents[4]
BUNDLE = REPO / "policies" / "mobile_lift"
EVAL = 2**30


@pytest.fixture(scope="module")
def env():
    e = gym.make(MobileLiftEnv.env_id)   # nominal: obs = raw (scale 1, no noise)
    yield e.unwrapped
    e.close()


def test_io_descriptor_terms():
    io = MobileLiftEnv.io_descriptor()
    obs = {t["name"]: t for t in io["observation"]}
    assert list(obs) == ["ee_x", "ee_y", "ee_z", "finger_width", "target_x", "target_y", "target_z",
                         "target_yaw_sin4", "target_yaw_cos4", "target_dz", "ee_to_target_dist"]
    for a in "xyz":
        src = obs[f"ee_{a}"]["source"]
        assert src["topic"] == "/tf" and src["derive"] == {"op": "tf_position", "parent": "base_link",
                                                           "child": "panda_grasptarget", "axis": a}
        src = obs[f"target_{a}"]["source"]
        assert (src["topic"], src["type"], src["field"]) == ("/grasp_target", "geometry_msgs/msg/PoseStamped",
                                                             f"pose.position.{a}")
    assert obs["target_yaw_sin4"]["source"]["field"] == "pose.orientation"
    assert obs["target_dz"]["source"]["derive"] == {"op": "offset_minus", "constant": TARGET_Z}
    assert TARGET_Z == pytest.approx(0.545) and REST_Z == pytest.approx(0.445)
    assert all(t["frame"] in ("base_link", "panda_hand") for t in io["observation"])
    assert [a.get("safe_action") for a in io["action"]] == ["zero", "zero", "zero", "hold"]
    assert [a["target"]["topic"] for a in io["action"]] == ["/arm/ee_delta"] * 3 + ["/arm/gripper"]


def test_shipped_bundle_validates_and_matches_the_terms():
    from rlstack_bundle.bundle import load

    b = load(str(BUNDLE))   # BundleError listing every problem otherwise
    assert b.io == yaml.safe_load(yaml.safe_dump(MobileLiftEnv.io_descriptor())), \
        "policies/mobile_lift/io.yaml is not what the env's term declarations generate: re-export it"
    ev = b.evaluation
    assert ev["episodes"] >= 100
    assert ev["nominal"]["success_rate"] >= 0.95 and ev["randomized"]["success_rate"] >= 0.95


@pytest.mark.parametrize("value, ok", [("hold", True), ("zero", True), (0.5, True), ("brake", False), (3.0, False),
                                       (None, False)])
def test_bundle_validator_checks_safe_action(tmp_path, value, ok):
    import shutil

    from rlstack_bundle.bundle import BundleError, load

    dest = tmp_path / "b"
    shutil.copytree(BUNDLE, dest)
    io = yaml.safe_load((dest / "io.yaml").read_text())
    io["action"][3]["safe_action"] = value
    (dest / "io.yaml").write_text(yaml.safe_dump(io))
    if ok:
        load(str(dest))
    else:
        with pytest.raises(BundleError, match="'gripper'.*safe_action"):
            load(str(dest))
    with pytest.raises(ValueError, match="safe_action"):
        from rlstack_bundle.terms import ActTerm, Source, check_terms

        check_terms(MobileLiftEnv.obs_terms, (ActTerm("g", "1", Source("/g", "std_msgs/msg/Bool", "data"),
                                                      (-1.0, 1.0), safe_action="brake"),))


def test_lift_descriptor_unchanged_by_safe_action_support():
    from rlstack_learning.envs.lift import PandaLiftEnv

    io = PandaLiftEnv.io_descriptor()
    assert all("safe_action" not in a for a in io["action"])
    shipped = yaml.safe_load((REPO / "policies" / "lift" / "io.yaml").read_text())
    assert shipped == yaml.safe_load(yaml.safe_dump(io))


def _independent_raw(sim):
    """The observation's raw values from what the deployed sources would carry, computed apart from the env."""
    from sim_bridges.geometry import matrix_to_quat, quat_to_matrix

    lookup = {t.child: (t.parent, tuple(t.pose.position), tuple(t.pose.orientation)) for t in sim.link_transforms()}
    ee, _ = ops.compose(lookup, "base_link", "panda_grasptarget")       # what /tf gives the node
    odom = sim.base_odometry().pose
    cube = sim.ground_truth()["target_cube"].pose
    # /grasp_target: T(world <- base)^-1 T(world <- cube), with matrices (PyBullet's transform helpers
    # round to ~1e-6)
    rb = quat_to_matrix(odom.orientation)
    pos = rb.T @ (np.asarray(cube.position) - np.asarray(odom.position))
    quat = tuple(matrix_to_quat(rb.T @ quat_to_matrix(cube.orientation)))
    js = sim.joint_state()
    names = list(sim.joint_names)
    read = {"ee_x": ee, "ee_y": ee, "ee_z": ee,
            "finger_width": [js.position[names.index(j)] for j in ("panda_finger_joint1", "panda_finger_joint2")],
            "target_x": pos[0], "target_y": pos[1], "target_z": pos[2],
            "target_yaw_sin4": quat, "target_yaw_cos4": quat, "target_dz": pos[2]}
    return np.array(ops.raw_vector(MobileLiftEnv.obs_terms, read))


#: PyBullet's link states and transform helpers round to ~1e-6 m, and the observation is float32:
#: two computations of the same frame chain agree to about 1e-6 (a wrong frame is off by centimetres)
CHAIN_ATOL = 2e-6


def test_observation_equals_derive_ops_also_after_driving(env):
    rng = np.random.default_rng(0)
    moved = 0.0
    for seed in (EVAL, EVAL + 1, 5):
        obs, _ = env.reset(seed=seed)
        np.testing.assert_allclose(obs, _independent_raw(env.sim), atol=CHAIN_ATOL, rtol=0)
        for i in range(20):
            if i < 12:   # drive and turn the base while the arm moves: base_link leaves the world origin
                env.sim.set_base_velocity(0.3, 0.8 if seed % 2 else -0.8)
            else:
                env.sim.set_base_velocity(0.0, 0.0)
            obs, *_ = env.step(rng.uniform(-1, 1, 4).astype(np.float32))
            np.testing.assert_allclose(obs, _independent_raw(env.sim), atol=CHAIN_ATOL, rtol=0)
        odom = env.sim.base_odometry().pose
        moved = max(moved, float(np.linalg.norm(odom.position[:2])))
        # the world-frame cube did not move, but its base_link position did: the obs is in base_link
        world = env.sim.ground_truth()["target_cube"].pose.position
        assert np.linalg.norm(obs[4:6] - world[:2]) > 0.01
    assert moved > 0.05


def test_observation_invariant_to_moving_the_whole_scene(env):
    import pybullet as p

    from sim_bridges.geometry import quat_from_rpy, quat_multiply, quat_to_matrix

    cid = env.sim.client_id
    rng = np.random.default_rng(1)
    for seed in (EVAL + 2, EVAL + 3):
        env.reset(seed=seed)
        for _ in range(15):
            env.step(rng.uniform(-1, 1, 4).astype(np.float32))
        before = env._raw_obs()
        # one rigid motion of everything: yaw about z + a floor translation (not stepped: pure kinematics)
        yaw, shift = rng.uniform(-np.pi, np.pi), [*rng.uniform(-3, 3, 2), 0.0]
        q = quat_from_rpy(0.0, 0.0, yaw)
        r = quat_to_matrix(q)
        for i in range(p.getNumBodies(physicsClientId=cid)):
            b = p.getBodyUniqueId(i, physicsClientId=cid)
            pos, orn = p.getBasePositionAndOrientation(b, physicsClientId=cid)
            if p.getBodyInfo(b, physicsClientId=cid)[0] == b"planeLink":
                continue
            new_pos = r @ np.asarray(pos) + np.asarray(shift)
            new_orn = quat_multiply(q, orn)
            p.resetBasePositionAndOrientation(b, new_pos.tolist(), list(new_orn), physicsClientId=cid)
        after = env._raw_obs()
        np.testing.assert_allclose(after, before, atol=1e-6, rtol=0)
        assert np.linalg.norm(env.sim.base_odometry().pose.position[:2]) > 0.1 or abs(yaw) > 0.3


def test_scripted_expert_lifts_the_cube(env):
    from rlstack_learning.envs.lift import scripted_expert
    from rlstack_learning.evaluate import run_episodes

    res = run_episodes(env, scripted_expert(env), [EVAL + i for i in range(3)])
    assert res["success_rate"] == 1.0, res
    assert res["min_length"] >= 40   # the 2 s hold


def test_shipped_bundle_succeeds_in_process():
    from rlstack_learning.play import play_bundle

    floor = yaml.safe_load((REPO / "config" / "train" / "mobile_lift.yaml").read_text())["success_floor"]
    res = play_bundle(str(BUNDLE), episodes=5)
    assert res["success_rate"] >= floor, res
    res = play_bundle(str(BUNDLE), episodes=5, randomize=True, seed_base=EVAL + 10_000)
    assert res["success_rate"] >= floor, res
