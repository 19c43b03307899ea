"""Standalone launcher: Isaac Sim (headless) + the project's bridge node, in one process. **Never run.**

Isaac Sim needs its ``SimulationApp`` created before any other ``isaacsim``/``omni`` import, and its
physics stepped from the process that owns the app; so this launcher starts the app, registers the
``isaac`` backend (:class:`sim_bridges.isaac.backend.IsaacSimBackend`) in ``sim_bridges.BACKENDS``,
and runs the same ``sim_bridge`` node (``rlstack_sim.bridge_node``) in the same interpreter with
``backend:=isaac``. Everything after the bridge (perception, navigation, policy, mission) runs
unchanged in other processes, as with PyBullet or MuJoCo.

Usage, with Isaac Sim 5.1's Python (``isaacsim`` pip package, or ``./python.sh`` of a standalone
install) and a ROS 2 environment whose rclpy that Python can import::

    python -m sim_bridges.isaac.launcher --scene home [--seed 5] [-- <more --ros-args ...>]

Without Isaac Sim this prints one line saying so and exits with code 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .conversions import require_isaacsim


def bridge_argv(scene: str, seed: int, extra: List[str]) -> List[str]:
    """The bridge node's argv: ``backend:=isaac``, the scene and seed, then ``extra`` ROS arguments."""
    return ["sim_bridge", "--ros-args", "-p", "backend:=isaac", "-p", f"scene:={scene}", "-p", f"seed:={int(seed)}",
            *extra]


def register_isaac_backend() -> None:
    """Make ``make_backend("isaac")`` (and the bridge's ``backend`` choice) build :class:`IsaacSimBackend`."""
    import sim_bridges

    def _isaac(**kwargs):
        from .backend import IsaacSimBackend

        return IsaacSimBackend(**kwargs)

    sim_bridges.BACKENDS["isaac"] = _isaac


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: List[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", default="home", help="scene to load (sim_bridges.scenes.scene_names())")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial reset")
    a = p.parse_args(argv)
    try:
        require_isaacsim()
    except RuntimeError as exc:
        print(f"sim_bridges.isaac.launcher: error: {exc}", file=sys.stderr)
        return 2
    from isaacsim import SimulationApp  # must come before every other isaacsim / omni import

    app = SimulationApp({"headless": True})
    try:
        register_isaac_backend()
        from rlstack_sim.bridge_node import main as bridge_main

        return int(bridge_main(bridge_argv(a.scene, a.seed, extra)) or 0)
    finally:
        app.close()


if __name__ == "__main__":
    sys.exit(main())
