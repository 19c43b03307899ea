import os
import sys

import pytest

# `colcon test` runs from the build dir; make the source package importable in-place too.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def cartpole_bundle(tmp_path_factory):
    """A tiny PPO cart-pole run (normalisation on), exported to a bundle with 2 evaluation episodes."""
    from rlstack_learning.config import validate
    from rlstack_learning.export import export_run
    from rlstack_learning.train import train

    root = tmp_path_factory.mktemp("bundle")
    cfg = validate({
        "task": "cartpole", "env_id": "RlStack/CartPole-v0", "algo": "ppo", "total_timesteps": 512,
        "num_envs": 2, "eval_freq": 10**6, "checkpoint_freq": 10**6,
        "hyperparams": {"ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}},
    })
    run = str(root / "run")
    train(cfg, run, progress=False)
    dest = str(root / "cartpole")
    export_run(run, dest, episodes=2, progress=False)
    return dest
