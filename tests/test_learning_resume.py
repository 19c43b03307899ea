"""Kill training with SIGKILL at random moments (a real subprocess), resume, and check that

* no complete-looking checkpoint is ever corrupt (every checkpoint folder matches its manifest),
* the resumed run starts from the newest checkpoint written before the kill (so at most one
  checkpoint interval is lost),
* the run then finishes and exports a valid bundle.
"""

import os
import random
import signal
import subprocess
import sys
import time

import yaml

from rlstack_bundle.bundle import load as load_bundle
from rlstack_learning.checkpoints import latest_checkpoint, read_model_dir

CKPT_FREQ = 1000
CONFIG = {
    "task": "cartpole", "env_id": "RlStack/CartPole-v0", "algo": "ppo", "seed": 3,
    "total_timesteps": 9000, "num_envs": 2, "checkpoint_freq": CKPT_FREQ, "eval_freq": 3000,
    "eval_episodes": 2, "hyperparams": {"ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 2}},
}


def _start(args, log):
    return subprocess.Popen([sys.executable, "-m", "rlstack_learning.train", *args, "--no-progress"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _kill_after_checkpoints(proc, run_dir, n_ckpt, rng, timeout=90.0):
    """SIGKILL once the run has >= n_ckpt checkpoints, after a random extra delay; return the newest seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, manifest = latest_checkpoint(run_dir)
        if manifest and manifest["timesteps"] >= n_ckpt * CKPT_FREQ:
            break
        assert proc.poll() is None, "training exited before it could be killed"
        time.sleep(0.05)
    else:
        raise AssertionError("no checkpoint appeared in time")
    time.sleep(rng.uniform(0.0, 0.6))  # any moment: possibly in the middle of a checkpoint write
    _, seen = latest_checkpoint(run_dir)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    return seen["timesteps"]


def _all_checkpoints_intact(run_dir):
    ckpts = os.path.join(run_dir, "checkpoints")
    visible = [d for d in os.listdir(ckpts) if not d.startswith(".")]
    assert visible, "no checkpoint survived"
    for d in visible:
        assert read_model_dir(os.path.join(ckpts, d)) is not None, f"corrupt checkpoint {d}"
    for d in ("best", "final"):
        if os.path.isdir(os.path.join(run_dir, d)):
            assert read_model_dir(os.path.join(run_dir, d)) is not None, f"corrupt {d}/"


def test_kill_and_resume(tmp_path):
    rng = random.Random(int(time.time()))
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(CONFIG))
    out, run_dir = tmp_path / "out", str(tmp_path / "out" / "cartpole" / "r")
    with open(tmp_path / "train.log", "ab") as log:
        proc = _start(["--task", str(cfg_path), "--out", str(out), "--run", "r"], log)
        try:
            seen = _kill_after_checkpoints(proc, run_dir, 2, rng)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _all_checkpoints_intact(run_dir)

        proc = _start(["--resume", run_dir], log)  # second kill, during the resumed run
        try:
            seen2 = _kill_after_checkpoints(proc, run_dir, seen // CKPT_FREQ + 2, rng)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _all_checkpoints_intact(run_dir)

        proc = _start(["--resume", run_dir, "--export", str(tmp_path / "bundle"), "--export-episodes", "2"], log)
        try:
            assert proc.wait(timeout=150) == 0
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    text = (tmp_path / "train.log").read_text()
    resumes = [ln for ln in text.splitlines() if ln.startswith("[train] resume")]
    assert len(resumes) == 2, text[-3000:]
    assert f"({seen} steps)" in resumes[0] or _resumed_steps(resumes[0]) >= seen, resumes[0]
    assert _resumed_steps(resumes[1]) >= seen2, resumes[1]
    summary = yaml.safe_load(open(os.path.join(run_dir, "summary.yaml")))
    assert summary["timesteps"] >= CONFIG["total_timesteps"] and summary["resumed_from"]
    _all_checkpoints_intact(run_dir)
    load_bundle(str(tmp_path / "bundle"))


def _resumed_steps(line):
    return int(line.split("(")[1].split(" steps")[0])
