"""rlstack_bundle on its own: it imports nothing from training, the simulator or ROS; the shipped
bundles load with onnxruntime alone; damage gives named problems; the frame math is right."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rlstack_bundle import frames
from rlstack_bundle.bundle import BundleError, load, main

REPO = Path(__file__).resolve().parents[4]
SHIPPED = sorted(p for p in (REPO / "policies").iterdir() if (p / "io.yaml").is_file())
HEAVY = ("torch", "stable_baselines3", "sb3_contrib", "gymnasium", "pybullet", "sim_bridges", "rlstack_learning",
         "rclpy", "onnx")


def test_shipped_bundles_are_found():
    assert {p.name for p in SHIPPED} >= {"cartpole", "ball_plate", "lift", "mobile_lift", "mobile_lift_perceived"}


def test_loading_every_shipped_bundle_imports_nothing_heavy():
    """The seam's promise: numpy, PyYAML and onnxruntime only (not even the onnx package)."""
    code = (
        "import sys\n"
        "import rlstack_bundle, rlstack_bundle.bundle, rlstack_bundle.derive, rlstack_bundle.terms\n"
        "import rlstack_bundle.frames\n"
        f"for p in {[str(p) for p in SHIPPED]!r}:\n"
        "    rlstack_bundle.bundle.load(p)\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules], 'onnxruntime' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[] True", out.stdout + out.stderr


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_bundle_acts_within_its_limits(path):
    b = load(str(path))
    images = {spec.input: np.zeros(spec.input_shape, np.uint8) for spec in b.image_specs}   # pixel bundles
    a = b.act(np.zeros(b.obs_dim, np.float32), images)
    cmd = b.command(a)
    assert cmd.shape == (len(b.io["action"]),)
    for value, term in zip(cmd, b.io["action"]):
        assert term["limits"][0] <= value <= term["limits"][1]


def test_cli_validates_and_reports(capsys, tmp_path):
    assert main(["validate", *map(str, SHIPPED)]) == 0
    assert capsys.readouterr().out.count("ok: ") == len(SHIPPED)
    assert main(["validate", str(tmp_path / "nope")]) == 1
    out = subprocess.run([sys.executable, "-m", "rlstack_bundle", "info", str(REPO / "policies/cartpole")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "task cartpole" in out.stdout, out.stdout + out.stderr


@pytest.fixture
def cartpole(tmp_path):
    dest = tmp_path / "cartpole"
    shutil.copytree(REPO / "policies/cartpole", dest)
    with open(dest / "provenance.yaml") as f:
        prov = yaml.safe_load(f)
    prov["policy_onnx_sha256"] = ""   # edits below change the model on purpose
    with open(dest / "provenance.yaml", "w") as f:
        yaml.safe_dump(prov, f)
    return dest


def _problems(path) -> str:
    with pytest.raises(BundleError) as exc:
        load(str(path))
    return "\n".join(exc.value.problems)


def test_damaged_model_is_named_without_the_onnx_package(cartpole):
    with open(cartpole / "policy.onnx", "r+b") as f:
        f.truncate(100)
    assert "policy.onnx: not a valid ONNX model" in _problems(cartpole)


def test_descriptor_that_does_not_match_the_model(cartpole):
    with open(cartpole / "io.yaml") as f:
        io = yaml.safe_load(f)
    io["observation"].pop()
    with open(cartpole / "io.yaml", "w") as f:
        yaml.safe_dump(io, f)
    assert "input 'obs' has shape [None, 4], but io.yaml declares 3 observation terms" in _problems(cartpole)


def test_missing_file(cartpole):
    os.remove(cartpole / "MODEL_CARD.md")
    assert "missing file(s): MODEL_CARD.md" in _problems(cartpole)


def _quat(axis, angle):
    s = math.sin(angle / 2)
    return (axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2))


def test_frame_math():
    q = _quat((0, 0, 1), math.pi / 2)
    assert frames.yaw(q) == pytest.approx(math.pi / 2)
    assert frames.quat_rotate(q, (1.0, 0.0, 0.0)) == pytest.approx((0.0, 1.0, 0.0))
    assert frames.yaw(frames.quat_mul(q, q)) == pytest.approx(math.pi)
    # odom -> base_link (1, 0, 0, yaw 90 deg) -> hand (0.5, 0, 0.2): hand at (1, 0.5, 0.2) in odom
    tree = {"base_link": ("odom", (1.0, 0.0, 0.0), q), "hand": ("base_link", (0.5, 0.0, 0.2), (0.0, 0.0, 0.0, 1.0))}
    pos, rot = frames.compose(tree, "odom", "hand")
    assert pos == pytest.approx((1.0, 0.5, 0.2)) and frames.yaw(rot) == pytest.approx(math.pi / 2)
    assert frames.walk_up(tree, "hand")[0] == "odom"
    with pytest.raises(KeyError, match="no transform to frame 'odom'"):
        frames.compose(tree, "map", "hand")
