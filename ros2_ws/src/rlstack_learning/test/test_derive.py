"""The machine-readable derive operations (rlstack_bundle.derive), the term schema that uses
them (the envs' descriptors), and the tasks' registration on import of rlstack_learning."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from rlstack_bundle import derive as D
from rlstack_bundle.terms import ObsTerm, Source, check_terms, derive


def test_compose_tf_chain_matches_matrices():
    rng = np.random.default_rng(0)

    def quat(axis, angle):
        axis = np.asarray(axis, float) / np.linalg.norm(axis)
        return (*(axis * math.sin(angle / 2)), math.cos(angle / 2))

    def mat(q):
        x, y, z, w = q
        return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])

    frames = ["world", "a", "b", "c", "d"]
    lookup, T = {}, np.eye(4)
    for parent, child in zip(frames, frames[1:]):
        q = quat(rng.normal(size=3), rng.uniform(-3, 3))
        t = tuple(rng.normal(size=3))
        lookup[child] = (parent, t, q)
        step = np.eye(4)
        step[:3, :3], step[:3, 3] = mat(q), t
        T = T @ step
    pos, rot = D.compose(lookup, "world", "d")
    assert np.allclose(pos, T[:3, 3]) and np.allclose(mat(rot), T[:3, :3])
    assert D.compose(lookup, "b", "b") == ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    with pytest.raises(KeyError, match="no transform to frame 'world'"):
        D.compose(lookup, "elsewhere", "d")


def test_ops_values():
    q = (0.0, 0.0, math.sin(0.35), math.cos(0.35))   # yaw 0.7
    assert D.apply({"op": "sin_kyaw", "k": 4}, q) == pytest.approx(math.sin(2.8))
    assert D.apply({"op": "cos_kyaw", "k": 4}, q) == pytest.approx(math.cos(2.8))
    assert D.apply({"op": "sum"}, [0.01, 0.02]) == pytest.approx(0.03)
    assert D.apply({"op": "offset_minus", "constant": 0.525}, 0.4) == pytest.approx(0.125)
    assert D.apply({"op": "tf_position", "parent": "w", "child": "t", "axis": "y"}, (1.0, 2.0, 3.0)) == 2.0
    raw = {"a": 1.0, "b": 2.0, "c": 4.0, "d": 6.0}
    assert D.apply_terms({"op": "distance", "a": ["a", "b"], "b": ["c", "d"]}, raw.__getitem__) == pytest.approx(5.0)


def test_schema_is_checked_in_terms_and_written_to_io():
    src = Source("/gt", "geometry_msgs/msg/PoseArray", "poses[].position.z", key="cube",
                 derive=derive("offset_minus", constant=0.5))
    dist = Source("/gt", "geometry_msgs/msg/PoseArray", "poses[].position", key="cube",
                  derive=derive("distance", a=("z",), b=("dz",)))
    terms = [ObsTerm("z", "m", "world", Source("/gt", "geometry_msgs/msg/PoseArray", "poses[].position.z", key="cube")),
             ObsTerm("dz", "m", "world", src), ObsTerm("d", "m", "world", dist)]
    check_terms(terms, [])
    assert src.to_dict()["derive"] == {"op": "offset_minus", "constant": 0.5}
    assert dist.to_dict()["derive"] == {"op": "distance", "a": ["z"], "b": ["dz"]}
    with pytest.raises(ValueError, match="unknown op 'magic'"):
        derive("magic")
    with pytest.raises(ValueError, match="missing parameter"):
        derive("tf_position", parent="world", child="tool")
    bad = [terms[0], ObsTerm("d", "m", "world",
                             Source("/gt", "x/msg/Y", "f", derive={"op": "distance", "a": ["z"], "b": ["q"]}))]
    with pytest.raises(ValueError, match=r"unknown term\(s\) \['q'\]"):
        check_terms(bad, [])
    # raw_vector: message ops on what each source read, then term ops
    assert D.raw_vector(terms, {"z": 0.4, "dz": 0.4}) == pytest.approx([0.4, 0.1, 0.3])


def test_lift_descriptor_is_machine_readable():
    from rlstack_learning.envs.lift import PandaLiftEnv

    io = PandaLiftEnv.io_descriptor()
    ops = {t["name"]: (t["source"].get("derive") or {}).get("op") for t in io["observation"]}
    assert ops == {"ee_x": "tf_position", "ee_y": "tf_position", "ee_z": "tf_position", "finger_width": "sum",
                   "cube_x": None, "cube_y": None, "cube_z": None, "cube_yaw_sin4": "sin_kyaw",
                   "cube_yaw_cos4": "cos_kyaw", "target_dz": "offset_minus", "ee_to_cube_dist": "distance"}
    names = [t["name"] for t in io["observation"]]
    assert all(D.check(t["source"].get("derive"), names, t["name"]) == [] for t in io["observation"])


def test_entry_points_match_envs():
    from rlstack_learning import ENTRY_POINTS, ENVS

    assert ENTRY_POINTS == {k: f"{c.__module__}:{c.__name__}" for k, c in ENVS.items()}


def test_package_registers_the_tasks_on_import():
    """The bundle modules live in rlstack_bundle (whose own tests check that it imports
    nothing heavy), so this package needs no import hook: importing it registers every
    task with Gymnasium without importing sim_bridges or torch (entry points are strings)."""
    code = (
        "import sys\n"
        "import rlstack_learning\n"
        "import gymnasium as gym\n"
        "print(all(e in gym.registry for e in rlstack_learning.ENTRY_POINTS), "
        "[m for m in ('sim_bridges', 'torch', 'stable_baselines3', 'pybullet') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True []", out.stdout + out.stderr
