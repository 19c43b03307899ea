#!/usr/bin/env python3
"""Re-pin requirements/constraints.txt from the packages installed in the current venv.

Run through `make lock` after changing requirements/*.txt, then review the diff. Only
distributions that pip can install by name are pinned: the ROS wheels also register internal
distributions (e.g. `std_msgs`, as egg-info folders inside the wheel) that exist on no index,
and pinning those would break installs. They, and the workspace's own packages, carry no pip
INSTALLER record, which is how they are told apart.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
# Pins kept whether or not they are installed now (used by later setup steps).
ALWAYS = {"torch": "2.13.0"}
HEADER = """# Exact versions of everything setup installs, so two machines get the same stack.
# Regenerate with 'make lock' after changing requirements/*.txt (then review the diff).
# torch is pinned here for the learning packages: only torch==2.13.0 is the CPU build.
"""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installable(dist: md.Distribution) -> bool:
    """False for the internal distributions the ros-* wheels carry (not on any index)."""
    installer = (dist.read_text("INSTALLER") or "").strip()
    # A direct_url.json marks an install from a path or URL (editable or local): not an index pin.
    return installer == "pip" and dist.read_text("direct_url.json") is None


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    pins: dict[str, str] = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if not name or canonical(name) in {"pip", "rlstack"}:
            continue
        if installable(dist):
            pins[canonical(name)] = dist.version
    pins.update(ALWAYS)
    lines = [f"{name}=={version}" for name, version in sorted(pins.items())]
    CONSTRAINTS.write_text(HEADER + "\n".join(lines) + "\n")
    print(f"lock: wrote {len(lines)} pins to {CONSTRAINTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
