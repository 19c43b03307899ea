"""Atomic writes and checkpoint integrity checks."""

import os

import pytest

from rlstack_common import atomic
from rlstack_learning.checkpoints import clean_partial, latest_checkpoint


def test_write_text_replaces_whole_file(tmp_path):
    p = tmp_path / "a.txt"
    atomic.write_text(str(p), "one")
    atomic.write_text(str(p), "two")
    assert p.read_text() == "two"
    assert os.listdir(tmp_path) == ["a.txt"]


def test_staged_dir_is_all_or_nothing(tmp_path):
    final = tmp_path / "bundle"
    with atomic.staged_dir(str(final)) as d:
        open(os.path.join(d, "x"), "w").write("v1")
    with pytest.raises(RuntimeError):
        with atomic.staged_dir(str(final)) as d:
            open(os.path.join(d, "x"), "w").write("v2-partial")
            raise RuntimeError("killed")
    assert (final / "x").read_text() == "v1"
    assert sorted(os.listdir(tmp_path)) == ["bundle"]  # no temporary left behind


def test_latest_checkpoint_skips_corrupt(tmp_path):
    import json

    for steps, content in ((100, "a"), (200, "b")):
        d = tmp_path / "checkpoints" / f"step_{steps:09d}"
        d.mkdir(parents=True)
        (d / "model.zip").write_text(content)
        (d / "manifest.json").write_text(json.dumps(
            {"timesteps": steps, "files": {"model.zip": atomic.sha256_file(str(d / "model.zip"))}}))
    (tmp_path / "checkpoints" / "step_000000200" / "model.zip").write_text("garbage")
    (tmp_path / "checkpoints" / ".step_000000300.tmp-x").mkdir()
    path, manifest = latest_checkpoint(str(tmp_path))
    assert manifest["timesteps"] == 100
    assert clean_partial(str(tmp_path)) == 1
