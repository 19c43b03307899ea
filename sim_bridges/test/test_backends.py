"""The backend registry: names, the errors for an unknown backend, a missing engine, a missing scene."""

from __future__ import annotations

import importlib.util
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
    # MuJoCo builds every scene shipped today; a scene registered later is refused (below)
    assert set(backend_scenes("mujoco")) == {"cartpole", "ball_plate", "panda_table", "mobile_table", "home",
                                             "home_kinds"}


def test_unknown_backend_is_one_line_listing_the_valid_ones():
    with pytest.raises(ValueError) as err:
        make_backend("gazebo")
    message = str(err.value)
    assert "\n" not in message and "'gazebo'" in message
    assert "mujoco" in message and "pybullet" in message


@pytest.mark.skipif(importlib.util.find_spec("isaacsim") is not None, reason="Isaac Sim is installed here")
def test_isaac_without_isaac_sim_is_one_line_saying_how_to_get_it():
    with pytest.raises(BackendUnavailable) as err:
        make_backend("isaac")
    message = str(err.value)
    assert "\n" not in message and "'isaac'" in message and "pip install isaacsim" in message
    assert "never run" in message and "mujoco" in message and "pybullet" in message


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


def test_a_gl_platform_that_does_not_load_is_one_line():
    """``MUJOCO_GL`` naming a platform that cannot load (here: a name mujoco does not know; OSMesa
    on a machine without libOSMesa fails the same way) gives one line, not an import traceback."""
    code = (
        "from sim_bridges import make_backend, BackendUnavailable\n"
        "try:\n    make_backend('mujoco')\nexcept BackendUnavailable as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, MUJOCO_GL="no_such_gl",
                                  PYTHONPATH=PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout
    assert "MUJOCO_GL=no_such_gl" in lines[0] and "egl" in lines[0]


def test_mujoco_refuses_a_scene_it_lacks_in_one_line():
    """A scene registered by a downstream package (here: cart-pole under a new name) is built by
    PyBullet but not by MuJoCo, whose scene list is explicit: one line naming what it has."""
    from sim_bridges.scenes import SCENES, register_scene
    from sim_bridges.scenes.cartpole import make_cartpole_scene

    scene = "downstream_test_scene"
    register_scene(scene, make_cartpole_scene)
    try:
        assert scene in backend_scenes("pybullet") and scene not in backend_scenes("mujoco")
        with make_backend("mujoco") as sim:
            with pytest.raises(ValueError) as err:
                sim.load_scene(scene)
        with make_backend("pybullet") as sim:
            sim.load_scene(scene)   # the other backend builds it
    finally:
        del SCENES[scene]
    message = str(err.value)
    assert "\n" not in message and f"'{scene}'" in message and "pybullet" in message
    for name in backend_scenes("mujoco"):
        assert name in message
    assert sim_bridges.BackendUnavailable is BackendUnavailable
