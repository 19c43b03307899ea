"""The Ray backend (docs/guides/scale-out-on-ray.md) on a local Ray instance of 2 CPUs: RLlib training to a success
floor and its bundle, the ONNX export equal to RLlib's deterministic action, and bundle evaluation
episodes sharded over Ray tasks equal to the single-process evaluation."""

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import ray  # the full profile installs it: requirements/scale.txt

import rlstack_learning  # noqa: F401  (registers the envs)
from rlstack_common.ray_cluster import init_ray, shards, shutdown

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def local_ray():
    info = init_ray(num_cpus=2)
    yield info
    shutdown()


def test_shards_are_contiguous_near_equal_and_keep_order():
    assert shards(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert shards([1, 2], 5) == [[1], [2]]
    assert shards(list(range(4)), 1) == [[0, 1, 2, 3]]
    with pytest.raises(ValueError):
        shards([1], 0)


# ---------------------------------------------------------------------------- export == RLlib
def _module(kind: str):
    """A fresh RLModule of RLlib's default PPO (continuous / discrete) or SAC architecture, with
    its weights perturbed so the test does not pass on an all-zero head."""
    import torch
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    torch.manual_seed(0)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    if kind == "sac":
        from ray.rllib.algorithms.sac import SACConfig as Config

        act = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    else:
        from ray.rllib.algorithms.ppo import PPOConfig as Config

        act = gym.spaces.Discrete(3) if kind == "ppo_discrete" else gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    c = Config().rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32, 32], fcnet_activation="tanh"))
    spec = c.get_default_rl_module_spec()
    spec.observation_space, spec.action_space, spec.model_config = obs_space, act, c.model_config
    spec.inference_only = kind != "sac"
    mod = spec.build()
    with torch.no_grad():
        for p in mod.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    return mod.eval()


def _filter_state(rng):
    from ray.rllib.utils.filter import RunningStat

    rs = RunningStat((4,))
    for x in rng.normal([0.3, -1.0, 0.05, 2.0], [0.5, 2.0, 0.1, 3.0], size=(300, 4)):
        rs.push(x)
    return {"shape": np.array([4]), "de_mean_to_zero": True, "de_std_to_one": True, "clip_by_value": 10.0,
            "running_stats": [rs.to_state()]}


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("kind", ["ppo", "ppo_discrete", "sac"])
def test_onnx_equals_rllib_deterministic_action(kind, normalize):
    from rlstack_learning.onnx_export import to_onnx_bytes
    from rlstack_learning.rllib_train import RllibPolicy, max_export_error

    rng = np.random.default_rng(1)
    mod = _module(kind)
    policy = RllibPolicy(mod, _filter_state(rng) if normalize else None, mod.action_space)
    onnx_bytes = to_onnx_bytes(policy.exportable(), 4)
    # wide observations: the normaliser's clip and the action clip are both exercised
    obs = (rng.normal(size=(500, 4)) * np.array([2.0, 8.0, 0.5, 12.0])).astype(np.float32)
    got = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"]).run(None, {"obs": obs})[0]
    ref = policy.act_batch(obs)
    assert got.shape == ref.shape
    if kind == "ppo_discrete":
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ref)
        assert len(set(ref.tolist())) > 1            # not a constant policy
    else:
        np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
        assert np.ptp(ref) > 0.1
        if kind == "ppo":
            assert (np.abs(ref) == 1.0).any()        # some actions clipped at the bound
    assert max_export_error(policy, onnx_bytes, 4) <= 1e-5


# ---------------------------------------------------------------------------- training + bundle
def test_rllib_cartpole_reaches_success_floor_and_exports_a_valid_bundle(local_ray, tmp_path):
    """RLlib PPO, 2 env runners on the local 2-CPU instance, the cart-pole task's own config
    (its whole 150,000-step budget; validation stops it at the first success, typically 20-40k steps);
    the bundle (evaluated over 2 Ray shards) passes the validator and its ONNX equals the run's RLlib
    policy."""
    from rlstack_bundle.bundle import load
    from rlstack_learning.config import load as load_cfg
    from rlstack_learning.rllib_train import export_ray_run, policy_from_dir, train_ray

    cfg = load_cfg(str(REPO / "config" / "train" / "cartpole.yaml"), {"checkpoint_freq": 4000})
    cfg.data["stop_patience"] = 1   # the first validation at the floor ends the test run
    run = str(tmp_path / "run")
    summary = train_ray(cfg, run, env_runners=2, progress=False)
    assert summary["env_runners"] == 2 and summary["cluster"]["cpus"] == 2
    assert os.listdir(os.path.join(run, "checkpoints")) and os.path.isdir(os.path.join(run, "tb", "ray_run"))
    best = summary["best_validation"]
    assert best is not None and best[0] >= cfg["success_floor"], summary

    dest = str(tmp_path / "cartpole_ray")
    ev = export_ray_run(run, dest, episodes=10, progress=False, ray_shards=2)
    b = load(dest)                                                   # the validator accepts it
    prov = b.provenance
    assert prov["training_backend"] == "ray-rllib" and prov["ray"]["ray"] == ray.__version__
    assert prov["ray"]["cpus"] == 2 and prov["ray"]["env_runners"] == 2
    assert prov["export_max_abs_error"] <= 1e-5
    assert ev["nominal"]["ray"]["shards"] == 2
    assert ev["nominal"]["success_rate"] >= cfg["success_floor"]
    # the shipped file acts like the run's RLlib policy (filter + module + deterministic action)
    policy = policy_from_dir(os.path.join(run, "best"))
    obs = np.random.default_rng(3).normal(size=(200, 4)).astype(np.float32)
    np.testing.assert_allclose(np.stack([b.act(o) for o in obs]), policy.act_batch(obs), atol=1e-5, rtol=0)

    # resume: from the newest complete checkpoint, its step count and validation state restored
    from rlstack_learning.checkpoints import latest_checkpoint

    ckpt, manifest = latest_checkpoint(run)
    cfg.data["total_timesteps"] = summary["timesteps"] + 1000
    again = train_ray(cfg, run, resume=True, env_runners=2, progress=False)
    assert again["resumed_from"] == os.path.basename(ckpt)
    assert manifest["timesteps"] < again["timesteps"] <= cfg["total_timesteps"] + 2 * 520



# ---------------------------------------------------------------------------- sharded evaluation
def test_sharded_bundle_evaluation_equals_single_process(local_ray):
    """Seeded episodes: 6 episodes of the shipped cart-pole bundle over 3 Ray tasks give the very
    records (returns, lengths, successes) of one process playing them in order."""
    from rlstack_learning.envs import EVAL_SEED_BASE
    from rlstack_learning.evaluate import evaluate_onnx_on_ray, onnx_episodes, summarize_episodes

    onnx_bytes = (REPO / "policies" / "cartpole" / "policy.onnx").read_bytes()
    seeds = [EVAL_SEED_BASE + i for i in range(6)]
    single = summarize_episodes(onnx_episodes("RlStack/CartPole-v0", onnx_bytes, seeds, True)["records"], 0.0)
    sharded = evaluate_onnx_on_ray("RlStack/CartPole-v0", onnx_bytes, seeds, True, shards=3)
    assert sharded["ray"]["shards"] == 3
    for k in ("episodes", "seeds", "successes", "mean_return", "std_return", "mean_length", "min_length",
              "failed_seeds"):
        assert sharded[k] == single[k], k
    assert sharded["domain_randomization"] is not None


def test_cli_errors_are_one_line(tmp_path):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "rlstack_learning.train", "--task", "cartpole", "--env-runners", "2",
                        "--out", str(tmp_path)], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == ["error: --address, --env-runners and --num-cpus "
                                                                   "need --backend ray"]
    r = subprocess.run([sys.executable, "-m", "rlstack_learning.train", "--task", "cartpole_discrete",
                        "--backend", "ray", "--num-cpus", "1", "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert (r.returncode == 2
            and r.stderr.strip().splitlines()[-1].startswith("error: algo: the Ray backend trains")), r.stderr
