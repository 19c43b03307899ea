"""Invalid configurations fail before training starts, naming the bad field."""

import os

import pytest
import yaml

from rlstack_learning.config import ConfigError, load, validate
from rlstack_learning.train import main

BASE = {"task": "cartpole", "env_id": "RlStack/CartPole-v0", "algo": "ppo", "total_timesteps": 1000,
        "hyperparams": {"ppo": {"n_steps": 64}}}
REPO_CONFIGS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "config", "train")


def _cfg(**changes):
    d = yaml.safe_load(yaml.safe_dump(BASE))
    d.update(changes)
    return d


@pytest.mark.parametrize("changes,field", [
    ({"num_envz": 4}, "num_envz"),
    ({"total_timesteps": -5}, "total_timesteps"),
    ({"num_envs": "8"}, "num_envs"),
    ({"algo": "ddpgx"}, "algo"),
    ({"algo": "dqn"}, "algo"),  # DQN on a continuous env
    ({"env_id": "RlStack/Nope-v0"}, "env_id"),
    ({"randomize": {"mass_scael": [1, 2]}}, "randomize"),
    ({"hyperparams": {"ppo": {"n_stepz": 64}}}, "hyperparams.ppo.n_stepz"),
    ({"hyperparams": {"bc": {"epochz": 3}}}, "hyperparams.bc.epochz"),
    ({"hyperparams": {"bc": {"demo_episodes": 0}}}, "hyperparams.bc.demo_episodes"),
    ({"hyperparams": {"bc": {"action_noise": "x"}}}, "hyperparams.bc.action_noise"),
    ({"hyperparams": {"ppo": {"gamma": 1.5}}}, "hyperparams.ppo.gamma"),
    ({"hyperparams": {"ppo": {"learning_rate": "fast"}}}, "hyperparams.ppo.learning_rate"),
    ({"hyperparams": {"ppo": {"policy_kwargs": {"net_arch": [64, "x"]}}}}, "hyperparams.ppo.policy_kwargs.net_arch"),
    ({"hyperparams": {"ppo": {"policy_kwargs": {"activation_fn": "sigmoidz"}}}},
     "hyperparams.ppo.policy_kwargs.activation_fn"),
])
def test_bad_field_is_named(changes, field):
    with pytest.raises(ConfigError, match=rf"{field.replace('.', '[.]')}:"):
        validate(_cfg(**changes), "test.yaml")


def test_missing_required_field():
    d = _cfg()
    del d["total_timesteps"]
    with pytest.raises(ConfigError, match="total_timesteps: required"):
        validate(d)


@pytest.mark.skipif(not os.path.isdir(REPO_CONFIGS), reason="repo config/train not found")
def test_repo_configs_are_valid():
    names = [f[:-5] for f in os.listdir(REPO_CONFIGS) if f.endswith(".yaml")]
    assert "cartpole" in names and "ball_plate" in names
    for name in names:
        cfg = load(os.path.join(REPO_CONFIGS, f"{name}.yaml"))
        assert cfg["task"] == name
        for algo in cfg["hyperparams"]:  # every algorithm section is valid for the env
            load(os.path.join(REPO_CONFIGS, f"{name}.yaml"), {"algo": algo})


def test_cli_fails_before_creating_anything(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_cfg(hyperparams={"ppo": {"batch_sise": 64}})))
    out = tmp_path / "out"
    assert main(["--task", str(path), "--out", str(out), "--no-progress"]) == 2
    assert "hyperparams.ppo.batch_sise" in capsys.readouterr().err
    assert not out.exists()
