"""The backend registry: names, the errors for an unknown backend, a missing engine, a missing scene."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import sim_bridges
from sim_bridges import BackendUnavailable, available_backends, backend_names, backend_scenes, make_backend
from sim_bridges.scenes import scene_names

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_registry_names_both_engines():
    assert backend_names() == ("mujoco", "pybullet")
    assert set(available_backends()) == {"mujoco", "pybullet"}  # both are pinned in requirements/python.txt
    assert backend_scenes("pybullet") == scene_names()
    assert set(backend_scenes("mujoco")) == {"cartpole", "ball_plate", "panda_table", "mobile_table"}


def test_unknown_backend_is_one_line_listing_the_valid_ones():
    with pytest.raises(ValueError) as err:
        make_backend("isaac")
    message = str(err.value)
    assert "\n" not in message and "'isaac'" in message
    assert "mujoco" in message and "pybullet" in message


def test_missing_mujoco_says_how_to_install_it():
    """In a process where ``mujoco`` cannot be imported, asking for it gives one line naming the fix."""
    code = (
        "import sys; sys.modules['mujoco'] = None\n"  # makes `import mujoco` raise ImportError
        "from sim_bridges import make_backend, BackendUnavailable\n"
        "try:\n    make_backend('mujoco')\nexcept BackendUnavailable as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout
    assert "pip install" in lines[0] and "mujoco" in lines[0] and "pybullet" in lines[0]


@pytest.mark.parametrize("scene", [s for s in scene_names() if s not in backend_scenes("mujoco")])
def test_mujoco_refuses_a_scene_it_lacks_in_one_line(scene):
    with make_backend("mujoco") as sim:
        with pytest.raises(ValueError) as err:
            sim.load_scene(scene)
    message = str(err.value)
    assert "\n" not in message and f"'{scene}'" in message and "pybullet" in message
    for name in backend_scenes("mujoco"):
        assert name in message
    assert sim_bridges.BackendUnavailable is BackendUnavailable
