"""``python -m rlstack_mission.fault_injection``: kill -9 each node of the fetch graph mid-fetch.

For each node in turn: start the fetch graph (launch/fetch.launch.yaml, robot mode, the sim in real
time), reset to a seeded layout (the demo's by default), send the fetch, and when the mission reports
the phase drawn for this node (seeded: by default among the phases where the fetch uses the node, ``--phases any``:
EXPLORE, NAVIGATE, GRASP or RETURN) plus a drawn 0-3 s, SIGKILL the node's
process. Then watch, from outside the robot (the evaluator's view, ground truth allowed):

* the runner: did it start the node again (``respawn`` in the launch file), or stop the graph
  (a required node: ``on_exit: shutdown``)?
* the robot: its true base speed 2 s after the kill (safe = stopped, or driven again by a live graph);
* the fetch: ``recovered`` (it still succeeded), ``ended`` (the client got a result: a failure code
  and its reason, or the mission's loss reported by the client), or ``hung`` (no result within
  ``--timeout``);
* afterwards: no process of the graph outlives it (orphans).

Writes ``out/fault_injection/results.json`` and prints a table (docs/reference/reliability.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

from rlstack_testing.processes import descendant_pids, node_pids

ROOT = Path(__file__).resolve().parents[4] if (Path(__file__).resolve().parents[4] / "launch").is_dir() else Path.cwd()
NODES = ("semantic_map", "nav_controller", "policy_node", "grasp_pose", "localizer", "mission", "sim_bridge")
PHASES = ("EXPLORE", "NAVIGATE", "GRASP", "RETURN")
#: --phases busy: a node is killed in a phase where the fetch is using it (a kill where it idles
#: shows little); the draw is among these
BUSY = {"semantic_map": ("EXPLORE", "NAVIGATE"), "nav_controller": ("EXPLORE", "NAVIGATE", "RETURN"),
        "policy_node": ("GRASP",), "grasp_pose": ("GRASP",), "localizer": ("EXPLORE", "NAVIGATE", "RETURN")}
FETCH_TIMEOUT_S = 600.0   # the whole fetch, as the evaluation gives it


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def run_one(victim: str, phase: str, extra_s: float, seed: int, color: str, timeout_s: float, out: Path,
            graph_args: Dict[str, str]) -> Dict:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from rlstack_common.background_spin import BackgroundSpin

    from .graph import FetchGraph
    from .harness import FetchHarness
    from .send_fetch import send_fetch

    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    node = rclpy.create_node("fault_injection", context=context)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(node)
    spin = BackgroundSpin(executor)   # stopped and joined before exit (rlstack_common.background_spin)
    rec: Dict = {"node": victim, "phase": phase, "delay_s": round(extra_s, 2), "seed": seed}
    log_path = out / f"graph_{victim}.log"
    pids_seen: List[int] = []
    try:
        with FetchGraph(ROOT, log_path, graph_args) as graph:
            graph.wait_ready(node)
            harness = FetchHarness(node)
            layout = harness.layout(seed, str(ROOT / "maps" / "home.yaml"), target_color=color)
            harness.apply(layout)
            reached = threading.Event()
            result: Dict = {}

            def on_fb(ph: str, _detail: str) -> None:
                if ph == phase:
                    reached.set()

            def fetch() -> None:
                try:
                    result.update(send_fetch(node, layout.query, layout.dropoff, FETCH_TIMEOUT_S, on_feedback=on_fb))
                except Exception as exc:   # noqa: BLE001 (reported, not raised: the run goes on)
                    result.update(code=-2, code_name="CLIENT_ERROR", reason=f"{type(exc).__name__}: {exc}")
                ok = False
                if result.get("code") == 0:   # the mission says so; the evaluator checks where the object is
                    try:
                        time.sleep(1.0)
                        ok = harness.delivered(layout)
                    except Exception:   # noqa: BLE001
                        ok = False
                result["success"] = ok

            t_fetch = threading.Thread(target=fetch, daemon=True)
            t0 = time.monotonic()
            t_fetch.start()
            while not reached.is_set() and t_fetch.is_alive():
                time.sleep(0.05)
            if not reached.is_set():
                rec.update(outcome="not killed", detail=f"the fetch ended before {phase}: {result.get('code_name')}")
                return rec
            time.sleep(extra_s)
            pids = node_pids(graph.proc.pid)
            pids_seen = descendant_pids(graph.proc.pid)
            if victim not in pids:
                rec.update(outcome="not killed", detail=f"{victim} not running (nodes: {sorted(pids)})")
                return rec
            os.kill(pids[victim], signal.SIGKILL)
            t_kill = time.monotonic()
            rec["killed_at_s"] = round(t_kill - t0, 1)
            base0 = harness.true_base
            time.sleep(2.0)
            base1 = harness.true_base
            rec["base_moved_2s_after_m"] = (round(math.hypot(base1[0] - base0[0], base1[1] - base0[1]), 3)
                                            if base0 and base1 and victim != "sim_bridge" else None)
            t_fetch.join(timeout_s)
            log = log_path.read_text(errors="replace")
            rec["respawned"] = f"respawned {victim}" in log
            rec["graph_stopped"] = graph.proc.poll() is not None
            pids_seen += [p for p in descendant_pids(graph.proc.pid) if p not in pids_seen]
            if t_fetch.is_alive():
                rec.update(outcome="hung", detail=f"no fetch result {timeout_s:g} s after the kill")
            else:
                rec.update(outcome="recovered" if result.get("success") else "ended",
                           code=result.get("code_name"), detail=str(result.get("reason", ""))[:200],
                           seconds_after_kill=round(time.monotonic() - t_kill, 1))
    finally:
        spin.stop()
        node.destroy_node()
        rclpy.shutdown(context=context)
    time.sleep(1.0)
    rec["orphans"] = [p for p in pids_seen if _alive(p)]
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default=",".join(NODES), help="comma-separated node names, killed one per fetch")
    p.add_argument("--seed", type=int, default=0, help="draws the phase and delay of each kill")
    p.add_argument("--layout-seed", type=int, default=3,
                   help="the fetch's layout (rlstack_mission.layouts; 3: the demo's)")
    p.add_argument("--color", default="yellow", help="the target cube's colour (the demo's: yellow)")
    p.add_argument("--timeout", type=float, default=300.0, help="s to wait for the fetch's result after the kill")
    p.add_argument("--out", default=str(ROOT / "out" / "fault_injection"))
    p.add_argument("--graph-arg", action="append", default=[], metavar="NAME:=VALUE")
    p.add_argument("--phase", choices=PHASES, default=None, help="kill every node in this phase (no draw)")
    p.add_argument("--phases", choices=("busy", "any"), default="busy",
                   help="busy: the phase is drawn among those where the fetch uses the node (default); any: among all")
    a = p.parse_args(argv)

    def interrupt(signum, _frame):   # SIGTERM as Ctrl-C: the graph of the run is stopped, not orphaned
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    from .graph import use_private_domain
    domain_lease = use_private_domain()   # noqa: F841 (held until the process exits)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    graph_args = dict(item.split(":=", 1) for item in a.graph_arg)
    rng = random.Random(a.seed)
    records = []
    for victim in a.nodes.split(","):
        phase = rng.choice(BUSY.get(victim, PHASES) if a.phases == "busy" else PHASES)
        phase = a.phase or phase
        extra = rng.uniform(0.0, 3.0)
        print(f"-- {victim}: kill in {phase} + {extra:.1f} s", flush=True)
        rec = run_one(victim, phase, extra, a.layout_seed, a.color, a.timeout, out, graph_args)
        records.append(rec)
        print(json.dumps(rec), flush=True)
        (out / "results.json").write_text(json.dumps({"runs": records}, indent=1))
    print("\n| node | killed in | runner | fetch | code / reason | base moved 2 s after | orphans |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        runner = "respawned it" if r.get("respawned") else ("stopped the graph" if r.get("graph_stopped") else "-")
        moved = "-" if r.get("base_moved_2s_after_m") is None else f"{100 * r['base_moved_2s_after_m']:.1f} cm"
        print(f"| {r['node']} | {r['phase']} +{r['delay_s']:.1f} s | {runner} | {r['outcome']} | "
              f"{r.get('code', '')}: {r.get('detail', '')[:90]} | {moved} | {len(r.get('orphans', []))} |")
    bad = [r for r in records if r["outcome"] == "hung" or r.get("orphans")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
