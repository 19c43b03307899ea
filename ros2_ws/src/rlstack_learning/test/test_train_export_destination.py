"""`train --export` never writes over an existing bundle folder unless `--overwrite` is given."""

import os

import pytest
import yaml

from rlstack_learning.config import ConfigError
from rlstack_learning.train import export_destination, main

TINY = {
    "task": "cartpole", "env_id": "RlStack/CartPole-v0", "algo": "ppo", "bundle": "cartpole",
    "total_timesteps": 256, "num_envs": 2, "eval_freq": 10**6, "checkpoint_freq": 10**6,
    "hyperparams": {"ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1}},
}


def _shipped(root):
    """A stand-in for a shipped bundle folder: one file whose content must survive."""
    folder = root / "policies" / "cartpole"
    folder.mkdir(parents=True)
    (folder / "io.yaml").write_text("shipped\n")
    return folder


def test_default_is_policies_bundle_when_free(tmp_path):
    dest = export_destination("", "cartpole", "out/train/cartpole/run1", False, policies=str(tmp_path / "policies"))
    assert dest == str(tmp_path / "policies" / "cartpole")


def test_existing_default_goes_to_a_new_folder_named_by_the_run(tmp_path):
    _shipped(tmp_path)
    dest = export_destination("", "cartpole", "out/train/cartpole/ppo_s0_x/", False,
                              policies=str(tmp_path / "policies"))
    assert dest == str(tmp_path / "policies" / "cartpole-ppo_s0_x")


def test_overwrite_keeps_the_default(tmp_path):
    _shipped(tmp_path)
    dest = export_destination("", "cartpole", "run1", True, policies=str(tmp_path / "policies"))
    assert dest == str(tmp_path / "policies" / "cartpole")


def test_explicit_existing_folder_is_refused_without_overwrite(tmp_path):
    folder = _shipped(tmp_path)
    with pytest.raises(ConfigError, match="--overwrite"):
        export_destination(str(folder), "cartpole", "run1", False)
    assert export_destination(str(folder), "cartpole", "run1", True) == str(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert export_destination(str(empty), "cartpole", "run1", False) == str(empty)


def test_cli_refuses_before_training(tmp_path, capsys):
    folder = _shipped(tmp_path)
    task = tmp_path / "tiny.yaml"
    task.write_text(yaml.safe_dump(TINY))
    code = main(["--task", str(task), "--out", str(tmp_path / "out"), "--run", "r1", "--no-progress",
                 "--export", str(folder)])
    assert code == 2
    assert "--overwrite" in capsys.readouterr().err
    assert not (tmp_path / "out" / "cartpole" / "r1").exists(), "training started before the export was refused"
    assert (folder / "io.yaml").read_text() == "shipped\n"


def test_cli_exports_next_to_a_shipped_bundle(tmp_path, monkeypatch):
    folder = _shipped(tmp_path)
    task = tmp_path / "tiny.yaml"
    task.write_text(yaml.safe_dump(TINY))
    monkeypatch.chdir(tmp_path)
    code = main(["--task", str(task), "--out", "out", "--run", "r1", "--no-progress",
                 "--export", "--export-episodes", "2"])
    assert code == 0
    assert (folder / "io.yaml").read_text() == "shipped\n"
    new = tmp_path / "policies" / "cartpole-r1"
    for name in ("io.yaml", "policy.onnx"):
        assert (new / name).is_file(), sorted(os.listdir(new))
    assert yaml.safe_load((new / "io.yaml").read_text())
