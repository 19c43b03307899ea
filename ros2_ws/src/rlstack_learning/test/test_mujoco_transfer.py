"""Domain randomisation and the lift bundle on the MuJoCo backend (sim-to-sim transfer's machinery)."""

import os

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from sim_bridges import make_backend  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_mass_randomisation_updates_what_mujoco_derives_from_masses():
    """Scaling a cube's mass must also scale the constants MuJoCo derives from it (subtree mass, the inverse
    weight that sets every constraint's softness): left stale, a lighter cube kept the nominal cube's
    contact impedance and firm grasps blew up (6 of 100 randomised mobile_lift episodes on MuJoCo)."""
    import mujoco

    with make_backend("mujoco") as sim:
        sim.load_scene("panda_table")
        sim.reset(3)
        b = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, "red_cube")
        model = sim.model
        mass0, invweight0 = float(model.body_mass[b]), float(model.body_invweight0[b, 0])
        before = sim.ground_truth()["red_cube"].pose.position.copy()
        sim.set_dynamics_scale({"red_cube": 0.5}, {"red_cube": 1.2})
        assert model.body_mass[b] == pytest.approx(0.5 * mass0)
        assert model.body_subtreemass[b] == pytest.approx(0.5 * mass0)
        assert model.body_invweight0[b, 0] == pytest.approx(2.0 * invweight0, rel=1e-6)
        # the episode's state is untouched (the constants are computed on scratch data)
        np.testing.assert_array_equal(sim.ground_truth()["red_cube"].pose.position, before)
        sim.set_dynamics_scale({}, {})   # absolute factors: back to nominal
        assert model.body_invweight0[b, 0] == pytest.approx(invweight0, rel=1e-9)
        # body_pose of a link: the URDF link's frame, as the published tree places it
        ee = sim.body_pose("panda_grasptarget").position
        sim.step(1)
        assert np.linalg.norm(sim.body_pose("panda_grasptarget").position - ee) < 0.01
        with pytest.raises(ValueError):
            sim.body_pose("no_such_link")


def test_lift_bundle_runs_on_mujoco():
    """The shipped lift policy (trained in PyBullet) lifts the cube on MuJoCo: 3 evaluation episodes, nominal."""
    from rlstack_learning.export import evaluate_onnx

    res = evaluate_onnx("RlStack/PandaLift-v0", os.path.join(REPO, "policies", "lift", "policy.onnx"), 3, False,
                        progress=False, backend="mujoco")
    assert res["successes"] == 3, res
