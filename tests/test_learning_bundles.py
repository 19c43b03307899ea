"""Every shipped bundle in policies/ validates and still succeeds in sim (a few episodes vs a floor)."""

import os
from pathlib import Path

import pytest
import yaml

from rlstack_learning.bundle import load
from rlstack_learning.play import play_bundle

REPO = Path(__file__).resolve().parents[1]
BUNDLES = sorted(p.parent.name for p in (REPO / "policies").glob("*/io.yaml"))
EPISODES = 5


def test_expected_bundles_are_shipped():
    assert {"cartpole", "ball_plate"} <= set(BUNDLES)


@pytest.mark.parametrize("name", BUNDLES)
def test_shipped_bundle(name):
    path = REPO / "policies" / name
    b = load(str(path))
    assert os.path.getsize(path / "policy.onnx") < 500_000
    ev = b.evaluation
    assert ev["episodes"] >= 100 and ev["nominal"]["success_rate"] >= 0.99, "model card claims are below the bar"
    cfg = yaml.safe_load(open(REPO / "config" / "train" / f"{b.provenance['task']}.yaml"))
    floor = cfg.get("success_floor", 0.9)
    res = play_bundle(str(path), episodes=EPISODES)
    assert res["success_rate"] >= floor, res
    res = play_bundle(str(path), episodes=EPISODES, randomize=True, seed_base=2**30 + 10_000)
    assert res["success_rate"] >= floor, res
