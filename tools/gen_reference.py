#!/usr/bin/env python3
"""Generate the reference tables in docs/reference/ from the code, or check that they are current.

The pages under ``docs/reference/`` hold marked blocks::

    <!-- generated: params semantic_map -->
    ...table written by this tool...
    <!-- end generated -->

    <!-- generated: launch-args fetch.launch.yaml -->
    ...
    <!-- end generated -->

``params NODE`` is the table of every parameter NODE declares: name, default, range, description.
It is read from the node's parameter table (:data:`TABLES`: a list of
``rlstack_common.param_table.Param`` in a parameters module of the node's package, the one the
node declares from; importing it starts nothing).
``launch-args FILE`` is the table of the arguments a launch file
declares, read by ``rlstack_launch.launch_file.load`` (the runner's own parser).

    source env.sh && python tools/gen_reference.py           # rewrite the blocks
    source env.sh && python tools/gen_reference.py --check   # exit 1 and name every stale block

``tests/test_docs.py`` runs ``--check``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
BLOCK = re.compile(r"(<!-- generated: (\S+) (\S+) -->\n)(.*?)(<!-- end generated -->)", re.S)

Row = Tuple[str, str, str, str]   # name, default, range, description


def _for_this_build(source: str) -> Callable[[], List[Any]]:
    """A table built by ``source`` ("module:function" taking this build's scenes and backends)."""
    def build() -> List[Any]:
        import importlib

        from sim_bridges import backend_names
        from sim_bridges.scenes import scene_names

        module, function = source.split(":")
        return getattr(importlib.import_module(module), function)(scene_names(), backend_names())

    return build


# Node -> its parameter table: "module:ATTRIBUTE" (a list of Param) or a function returning the list.
TABLES: Dict[str, Any] = {
    "nav_controller": "rlstack_nav.parameters:PARAMS",
    "mission": "rlstack_mission.parameters:MISSION",
    "sim_bridge": _for_this_build("rlstack_sim.parameters:bridge_parameters"),
    "semantic_map": "rlstack_perception.parameters:SEMANTIC_MAP",
    "grasp_pose": "rlstack_perception.parameters:GRASP_POSE",
    "policy_node": "rlstack_policy.parameters:POLICY_NODE",
    "localizer": "rlstack_localization.parameters:LOCALIZER",
    "arm_adapter": "rlstack_adapters.parameters:ARM_ADAPTER",
    "twist_stamper": "rlstack_adapters.parameters:TWIST_STAMPER",
    "cmd_vel_mux": "rlstack_adapters.parameters:CMD_VEL_MUX",
    "live_view": "rlstack_view.parameters:LIVE_VIEW",
    "robot_state_publisher": "rlstack_description.parameters:ROBOT_STATE_PUBLISHER",
    "smoke_talker": "rlstack_smoke.parameters:SMOKE_TALKER",
    "smoke_map": "rlstack_smoke.parameters:SMOKE_MAP",
    "train_node": "rlstack_learning.parameters:TRAIN_NODE",
    "batch_bridge": _for_this_build("rlstack_sim.batch_parameters:batch_bridge_parameters"),
    "ground_truth_grasp_target": "rlstack_sim.grasp_target_parameters:GROUND_TRUTH_GRASP_TARGET",
    "echo_node": "rlstack_testing.parameters:ECHO_NODE",
}


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return f"`{value}`" if value else "`''`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value!r}`".replace("True", "true").replace("False", "false")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _range(lo: Any, hi: Any, constraints: str = "") -> str:
    parts = []
    if lo is not None and hi is not None:
        parts.append(f"{lo:g} .. {hi:g}" if isinstance(lo, float) or isinstance(hi, float) else f"{lo} .. {hi}")
    if constraints:
        parts.append(constraints)
    return "; ".join(parts)


def table(node: str) -> List[Any]:
    """The parameter table of ``node`` (KeyError for a node without one)."""
    import importlib

    source = TABLES[node]
    if callable(source):
        return list(source())
    module, attr = source.split(":")
    return list(getattr(importlib.import_module(module), attr))


def table_rows(node: str) -> List[Row]:
    from rlstack_common.param_table import help_text

    return [(p.name, _fmt(p.default), _range(p.min_value, p.max_value, p.constraints), help_text(p))
            for p in table(node)]


def params_rows(node: str) -> List[Row]:
    if node not in TABLES:
        raise KeyError(f"no parameter table known for node '{node}' (tools/gen_reference.py TABLES)")
    return table_rows(node)


def params_table(node: str) -> str:
    rows = params_rows(node)
    lines = ["| parameter | default | range | description |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {_cell(d)} | {_cell(r)} | {_cell(t)} |" for n, d, r, t in rows]
    return "\n".join(lines) + "\n"


def launch_args_table(file_name: str) -> str:
    from rlstack_launch.launch_file import load

    result = load(str(ROOT / "launch" / file_name))
    lines = ["| argument | default | description |", "|---|---|---|"]
    for info in result.declared.values():
        declared_in = Path(re.sub(r":\d+$", "", info.source or file_name)).name
        where = "" if declared_in == file_name else f" (passed to `{declared_in}`)"
        default = "(required)" if info.default is None else f"`{info.default}`" if info.default else "`''`"
        lines.append(f"| `{info.name}` | {_cell(default)} | {_cell(info.description)}{where} |")
    return "\n".join(lines) + "\n"


GENERATORS: Dict[str, Callable[[str], str]] = {"params": params_table, "launch-args": launch_args_table}


def render(text: str, problems: List[str], where: str) -> str:
    def one(m: re.Match) -> str:
        kind, key = m.group(2), m.group(3)
        try:
            body = GENERATORS[kind](key)
        except Exception as exc:  # noqa: BLE001 -- reported per block, the others still render
            problems.append(f"{where}: generated {kind} {key}: {type(exc).__name__}: {exc}")
            return m.group(0)
        return m.group(1) + body + m.group(5)

    return BLOCK.sub(one, text)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a block is stale")
    ap.add_argument("pages", nargs="*", help="pages to process (default: every docs/reference/*.md)")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "sim_bridges"))
    pages = [Path(p).resolve() for p in a.pages] or sorted(REFERENCE.glob("*.md"))
    problems: List[str] = []
    stale: List[str] = []
    blocks = 0
    for page in pages:
        text = page.read_text()
        blocks += len(BLOCK.findall(text))
        new = render(text, problems, str(page.relative_to(ROOT)))
        if new != text:
            if a.check:
                for old_m, new_m in zip(BLOCK.finditer(text), BLOCK.finditer(new)):
                    if old_m.group(0) != new_m.group(0):
                        stale.append(f"{page.relative_to(ROOT)}: generated {old_m.group(2)} {old_m.group(3)}")
            else:
                page.write_text(new)
                print(f"wrote {page.relative_to(ROOT)}")
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    for line in stale:
        print(f"stale: {line} (run: python tools/gen_reference.py)", file=sys.stderr)
    print(f"{blocks} generated blocks in {len(pages)} pages; {len(stale)} stale, {len(problems)} errors")
    return 1 if problems or stale else 0


if __name__ == "__main__":
    sys.exit(main())
