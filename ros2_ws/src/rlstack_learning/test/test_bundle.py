"""Bundle validation: a good bundle passes; each kind of damage gives a clear, named error."""

import os
import shutil

import numpy as np
import pytest
import yaml

from rlstack_bundle.bundle import BundleError, load, main


@pytest.fixture
def bundle(cartpole_bundle, tmp_path):
    dest = tmp_path / "b"
    shutil.copytree(cartpole_bundle, dest)
    return str(dest)


def _edit_yaml(path, fn):
    with open(path) as f:
        data = yaml.safe_load(f)
    fn(data)
    with open(path, "w") as f:
        yaml.safe_dump(data, f)


def _problems(path):
    with pytest.raises(BundleError) as exc:
        load(path)
    return "\n".join(exc.value.problems)


def test_good_bundle_loads_and_acts(bundle):
    b = load(bundle)
    a = b.act(np.zeros(4, np.float32))
    assert a.shape == (1,) and -1 <= a[0] <= 1
    cmd = b.command(np.array([2.0]))
    assert cmd[0] == pytest.approx(10.0)  # clipped, then scaled to newtons
    assert b.evaluation["episodes"] == 2
    assert os.path.getsize(os.path.join(bundle, "policy.onnx")) < 200_000


def test_missing_bundle_and_missing_file(bundle, tmp_path):
    assert "no such bundle directory" in _problems(str(tmp_path / "nope"))
    os.remove(os.path.join(bundle, "io.yaml"))
    assert "missing file(s): io.yaml" in _problems(bundle)


def test_corrupt_onnx(bundle):
    path = os.path.join(bundle, "policy.onnx")
    with open(path, "r+b") as f:
        f.truncate(100)
    assert "sha256 differs" in _problems(bundle)
    _edit_yaml(os.path.join(bundle, "provenance.yaml"), lambda d: d.update(policy_onnx_sha256=""))
    assert "policy.onnx: not a valid ONNX model" in _problems(bundle)


def test_descriptor_size_mismatch(bundle):
    _edit_yaml(os.path.join(bundle, "io.yaml"), lambda d: d["observation"].pop())
    assert "input 'obs' has shape [None, 4], but io.yaml declares 3 observation terms" in _problems(bundle)


def test_bad_limits_and_yaml(bundle):
    def bad(d):
        d["action"][0]["limits"] = [5.0, -5.0]
    _edit_yaml(os.path.join(bundle, "io.yaml"), bad)
    assert "limits must be [low, high]" in _problems(bundle)
    with open(os.path.join(bundle, "evaluation.yaml"), "w") as f:
        f.write("episodes: [unclosed\n")
    assert "evaluation.yaml: not valid YAML" in _problems(bundle)


def test_cli_exit_codes(bundle, tmp_path, capsys):
    assert main(["validate", bundle]) == 0
    assert main(["validate", bundle, str(tmp_path / "missing")]) == 1
    assert "no such bundle directory" in capsys.readouterr().err
    assert main(["info", bundle]) == 0
