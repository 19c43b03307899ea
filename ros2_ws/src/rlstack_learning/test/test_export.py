"""The ONNX graph (normalisation folded in) equals the SB3 deterministic action within 1e-5."""

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

import rlstack_learning  # noqa: F401
from rlstack_learning.config import algorithms
from rlstack_learning.onnx_export import exportable, sb3_deterministic_action, to_onnx_bytes

CASES = [
    ("ppo", "RlStack/CartPole-v0", {"n_steps": 64, "batch_size": 64, "n_epochs": 1}),
    ("ppo", "RlStack/CartPoleDiscrete-v0", {"n_steps": 64, "batch_size": 64, "n_epochs": 1}),
    ("sac", "RlStack/BallPlate-v0", {"learning_starts": 64, "batch_size": 32}),
    ("td3", "RlStack/BallPlate-v0", {"learning_starts": 64, "batch_size": 32}),
    ("tqc", "RlStack/CartPole-v0", {"learning_starts": 64, "batch_size": 32, "policy_kwargs": {"n_quantiles": 5}}),
    ("dqn", "RlStack/CartPoleDiscrete-v0", {"learning_starts": 64, "batch_size": 32}),
]


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("algo,env_id,hp", CASES, ids=[f"{a}-{e.split('/')[1]}" for a, e, _ in CASES])
def test_onnx_equals_sb3_deterministic_action(algo, env_id, hp, normalize):
    venv = make_vec_env(env_id, n_envs=1, seed=0)
    if normalize:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False)
    model = algorithms()[algo]("MlpPolicy", venv, seed=0, device="cpu", **hp)
    model.learn(160)  # a few updates, and non-trivial normalisation statistics
    vecnorm = model.get_vec_normalize_env()
    module = exportable(model, vecnorm.obs_rms if vecnorm else None)
    n_obs = venv.observation_space.shape[0]
    sess = ort.InferenceSession(to_onnx_bytes(module, n_obs), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    scale = np.sqrt(vecnorm.obs_rms.var) * 3 if vecnorm else 1.0
    obs = (rng.normal(size=(500, n_obs)) * scale).astype(np.float32)
    got = sess.run(None, {"obs": obs})[0]
    ref = sb3_deterministic_action(model, obs, vecnorm)
    assert got.shape == np.asarray(ref).shape
    if isinstance(venv.action_space, gym.spaces.Discrete):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    venv.close()


def test_exported_bundle_matches_run_model(cartpole_bundle):
    """The shipped artefact (through the bundle loader) acts like the trained model folder."""
    import os

    from rlstack_bundle.bundle import load
    from rlstack_learning.checkpoints import load_model_dir

    b = load(cartpole_bundle)
    run = os.path.join(os.path.dirname(cartpole_bundle), "run", "best")
    model, vecnorm, _ = load_model_dir(run)
    obs = np.random.default_rng(2).normal(size=(200, 4)).astype(np.float32)
    np.testing.assert_allclose(b.act(obs), sb3_deterministic_action(model, obs, vecnorm), atol=1e-5, rtol=0)
    assert b.provenance["export_max_abs_error"] <= 1e-5
