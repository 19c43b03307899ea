"""Every launch file in launch/ names packages, executables and params files that exist.

This is the static check users get from `python -m rlstack_launch FILE --check`; running it
over all files here means a renamed executable or a moved params file fails CI, not a user.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from rlstack_launch import check_launch_file, load_launch_file

LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.yaml"))


def test_there_are_launch_files():
    assert LAUNCH_FILES, "launch/ holds no *.launch.yaml"


@pytest.mark.parametrize("launch_file", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_resolves(launch_file):
    assert check_launch_file(str(launch_file), {}) == []
    for spec in load_launch_file(str(launch_file), {}):
        assert spec.exe_path and spec.required is not None
        for entry in spec.params:
            if entry[0] == "file":
                assert Path(entry[1]).is_file()


@pytest.mark.parametrize("params_file", sorted((REPO / "launch" / "params").glob("*.yaml")), ids=lambda p: p.name)
def test_params_files_are_ros_params_yaml(params_file):
    data = yaml.safe_load(params_file.read_text())
    assert isinstance(data, dict) and data
    for node_key, section in data.items():
        assert set(section) == {"ros__parameters"}, f"{params_file.name}: {node_key} has keys other than ros__parameters"
        assert isinstance(section["ros__parameters"], dict)


def test_check_reports_a_missing_executable_in_one_line(tmp_path):
    bad = tmp_path / "bad.launch.yaml"
    bad.write_text("launch:\n  - node: {pkg: rlstack_smoke, exec: no_such_node, name: x}\n")
    result = subprocess.run([sys.executable, "-m", "rlstack_launch", str(bad), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_node" in lines[0] and lines[0].startswith("rlstack_launch: error:")
    assert "Traceback" not in result.stderr
