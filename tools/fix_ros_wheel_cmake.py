#!/usr/bin/env python3
"""Fix the include paths baked into the ROS 2 PyPI wheels' exported CMake files.

Why: the `ros-*` wheels on PyPI were built in a manylinux container, and each message
package's exported `share/<pkg>/cmake/*.cmake` still names that container's Python and
NumPy headers (`/opt/python/cp311-cp311/include/python3.11`, `.../numpy/_core/include`).
Building our own interface packages (rlstack_interfaces, the compat tf2_msgs) against
them fails until those paths point at this machine's headers.

What: rewrites those two paths, in `<prefix>/share/**/*.cmake` only, to this
interpreter's include directory and the installed NumPy's include directory. It touches
nothing outside the given prefix (the virtual environment), is idempotent, and prints
how many files it changed. Run it with the venv's own python:

    .venv/bin/python tools/fix_ros_wheel_cmake.py .venv
"""

from __future__ import annotations

import argparse
import re
import sys
import sysconfig
from pathlib import Path

# The wheel builder's paths, e.g. /opt/python/cp311-cp311/include/python3.11 and
# /opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include.
BUILDER_PYTHON_INCLUDE = re.compile(r"/opt/python/cp3\d+-cp3\d+t?/include/python3\.\d+t?")
BUILDER_NUMPY_INCLUDE = re.compile(
    r"/opt/python/cp3\d+-cp3\d+t?/lib/python3\.\d+t?/site-packages/numpy/(?:_core|core)/include"
)


def local_include_dirs() -> tuple[str, str]:
    """Return (python include dir, numpy include dir) of this interpreter."""
    python_include = sysconfig.get_paths()["include"]
    try:
        import numpy
    except ImportError:
        sys.exit("fix_ros_wheel_cmake: error: numpy is not installed in this interpreter "
                 "(run the setup step that installs requirements first)")
    return python_include, numpy.get_include()


def fix_prefix(prefix: Path) -> int:
    """Rewrite builder paths under prefix/share; return the number of files changed."""
    python_include, numpy_include = local_include_dirs()
    changed = 0
    for cmake_file in sorted((prefix / "share").rglob("*.cmake")):
        text = cmake_file.read_text(encoding="utf-8", errors="surrogateescape")
        if "/opt/python/" not in text:
            continue
        # NumPy first: its path starts with the same builder prefix as Python's.
        fixed = BUILDER_NUMPY_INCLUDE.sub(numpy_include, text)
        fixed = BUILDER_PYTHON_INCLUDE.sub(python_include, fixed)
        if fixed != text:
            cmake_file.write_text(fixed, encoding="utf-8", errors="surrogateescape")
            changed += 1
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix", type=Path, help="the virtual environment (ROS prefix) to fix")
    args = parser.parse_args()
    if not (args.prefix / "share").is_dir():
        print(f"fix_ros_wheel_cmake: error: {args.prefix}/share does not exist "
              "(is this the venv with the ROS wheels installed?)", file=sys.stderr)
        return 2
    changed = fix_prefix(args.prefix)
    left = [p for p in (args.prefix / "share").rglob("*.cmake")
            if "/opt/python/" in p.read_text(encoding="utf-8", errors="surrogateescape")]
    print(f"fix_ros_wheel_cmake: rewrote builder include paths in {changed} file(s) under {args.prefix}/share")
    if left:
        print(f"fix_ros_wheel_cmake: error: builder paths remain in {left[0]} and {len(left) - 1} more",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
