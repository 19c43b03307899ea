"""Type hashes (RIHS01) of ROS 2 interface definitions, computed from their source files.

``compute_hashes(package_dir, package_name, include_dirs, work_dir)`` runs rosidl's own
pipeline (``rosidl_adapter`` .msg/.srv/.action -> .idl, then
``rosidl_generator_type_description``) on the definitions under ``package_dir`` and returns
``{type_name: "RIHS01_..."}`` for every top-level type, without building the package.
Run as a script to print the hashes of a package folder as JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

_KINDS = {"msg": "convert_msg_to_idl", "srv": "convert_srv_to_idl", "action": "convert_action_to_idl"}


def compute_hashes(package_dir: Path, package_name: str, include_dirs: dict[str, Path],
                   work_dir: Path) -> dict[str, str]:
    import rosidl_adapter.action
    import rosidl_adapter.msg
    import rosidl_adapter.srv
    from rosidl_generator_type_description import generate_type_hash

    modules = {"msg": rosidl_adapter.msg, "srv": rosidl_adapter.srv, "action": rosidl_adapter.action}
    package_dir = Path(package_dir)
    idl_dir = Path(work_dir) / "idl" / package_name
    out_dir = Path(work_dir) / "type_description" / package_name
    idl_tuples = []
    for kind, func in _KINDS.items():
        for src in sorted((package_dir / kind).glob(f"*.{kind}")):
            with contextlib.redirect_stdout(io.StringIO()):
                idl = getattr(modules[kind], func)(
                    package_dir, package_name, src.relative_to(package_dir), idl_dir / kind)
            idl_tuples.append(f"{idl_dir}:{idl.relative_to(idl_dir)}")
    args = {
        "package_name": package_name,
        "output_dir": str(out_dir),
        "idl_tuples": idl_tuples,
        "include_paths": [f"{pkg}:{path}" for pkg, path in include_dirs.items()],
    }
    args_file = Path(work_dir) / "args.json"
    args_file.write_text(json.dumps(args))
    generate_type_hash(str(args_file))
    hashes = {}
    for tup in idl_tuples:
        js = out_dir / Path(tup.rsplit(":", 1)[1]).with_suffix(".json")
        top = json.loads(js.read_text())["type_hashes"][0]
        hashes[top["type_name"]] = top["hash_string"]
    return hashes


def installed_hashes(share_dir: Path) -> dict[str, str]:
    """``{type_name: hash}`` of the top-level types in an installed package's share folder."""
    hashes = {}
    for kind in _KINDS:
        for js in sorted((Path(share_dir) / kind).glob("*.json")):
            top = json.loads(js.read_text())["type_hashes"][0]
            hashes[top["type_name"]] = top["hash_string"]
    return hashes


def share_dirs(*packages: str) -> dict[str, Path]:
    from ament_index_python.packages import get_package_share_directory

    return {p: Path(get_package_share_directory(p)) for p in packages}


if __name__ == "__main__":
    import tempfile

    pkg_dir = Path(sys.argv[1])
    name = sys.argv[2] if len(sys.argv) > 2 else pkg_dir.name
    deps = share_dirs("builtin_interfaces", "std_msgs", "geometry_msgs", "action_msgs",
                      "service_msgs", "unique_identifier_msgs")
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(compute_hashes(pkg_dir, name, deps, Path(tmp)), indent=1, sort_keys=True))
