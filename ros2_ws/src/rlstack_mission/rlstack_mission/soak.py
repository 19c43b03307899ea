"""``python -m rlstack_mission.soak [--fetches 50]``: many fetches back to back in one graph.

Starts the fetch graph once and runs fetches over the seeded layouts (cycling), as
:mod:`rlstack_mission.evaluate` does, and after each fetch samples every node's resident memory,
open file descriptors and threads from /proc. Each fetch is appended to ``soak.jsonl`` at once,
so an interrupted soak keeps what it did; ``--resume`` continues the count from that file (in a new
graph: the memory slope is then reported per graph run). The summary: success rate over the soak,
the failures, the fetches the mission reported SUCCEEDED and the evaluator did not confirm, the time
per successful fetch, and per node the least-squares slope of RSS (MB per fetch), the first and last
RSS, and the change in file descriptors and threads, with the worst of each over the nodes;
``--record docs/results/<name>.json`` also writes it with its command, commit, date and hardware.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from rlstack_common.results_record import add_record_argument, command_line, commit_of, record
from rlstack_testing.processes import node_pids

from .evaluate import percentile, starts_not_localised

ROOT = Path(__file__).resolve().parents[4] if (Path(__file__).resolve().parents[4] / "launch").is_dir() else Path.cwd()


def node_usage(runner_pid: int) -> Dict[str, Dict[str, float]]:
    """Per node of the runner: pid, RSS (MB), open file descriptors, threads, CPU seconds so far."""
    out: Dict[str, Dict[str, float]] = {}
    for name, pid in node_pids(runner_pid).items():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            stat = Path(f"/proc/{pid}/stat").read_text()
            fds = len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            continue   # exited meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        # /proc/pid/stat: fields after the ')' of the command name; utime, stime are 14th, 15th overall
        ticks = stat.rsplit(")", 1)[1].split()
        cpu_s = (int(ticks[11]) + int(ticks[12])) / os.sysconf("SC_CLK_TCK")
        out[name] = {"pid": pid, "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1), "fds": fds,
                     "threads": int(fields["Threads"]), "cpu_s": round(cpu_s, 2)}
    return out


def slope(ys: List[float]) -> float:
    """Least-squares slope of ``ys`` against 0, 1, 2, ..."""
    n = len(ys)
    if n < 2:
        return 0.0
    mx, my = (n - 1) / 2, sum(ys) / n
    return sum((i - mx) * (y - my) for i, y in enumerate(ys)) / sum((i - mx) ** 2 for i in range(n))


def cpu_percent(rows: List[Dict], node: str) -> Optional[float]:
    """The node's mean CPU use (% of one core) between the first and the last sample of one process."""
    samples = [(r["time"], r["usage"][node]) for r in rows if node in r["usage"] and "cpu_s" in r["usage"][node]]
    if len(samples) < 2 or samples[0][1]["pid"] != samples[-1][1]["pid"]:
        return None
    (t0, u0), (t1, u1) = samples[0], samples[-1]
    return round(100.0 * (u1["cpu_s"] - u0["cpu_s"]) / max(t1 - t0, 1e-9), 1)


def summarize(rows: List[Dict]) -> Dict:
    ok = sum(1 for r in rows if r["success"])
    nodes = sorted({n for r in rows for n in r["usage"]})
    per_node = {}
    for n in nodes:
        series = [r["usage"][n] for r in rows if n in r["usage"]]
        rss = [s["rss_mb"] for s in series]
        per_node[n] = {"rss_first_mb": rss[0], "rss_last_mb": rss[-1], "rss_slope_mb_per_fetch": round(slope(rss), 3),
                       # caches and pools fill during the first fetches: the second half shows a leak, if any
                       "rss_slope_second_half_mb_per_fetch": round(slope(rss[len(rss) // 2:]), 3),
                       "fds_change": series[-1]["fds"] - series[0]["fds"],
                       "threads_change": series[-1]["threads"] - series[0]["threads"], "samples": len(series),
                       "restarts": (len({s["pid"] for s in series if "pid" in s}) - 1
                                    if series and "pid" in series[0] else None),
                       "cpu_percent_mean": cpu_percent(rows, n)}
    times = sorted(r["wall_s"] for r in rows if r["success"] and "wall_s" in r)
    slopes = {n: v["rss_slope_second_half_mb_per_fetch"] for n, v in per_node.items()}
    worst_half = max(slopes, key=slopes.get) if slopes else None
    return {"fetches": len(rows), "succeeded": ok, "success_rate": round(ok / len(rows), 3) if rows else 0.0,
            "failures": dict(collections.Counter(r.get("code_name", "?") for r in rows if not r["success"])),
            # the mission said SUCCEEDED, the simulator's truth has the object elsewhere: a false success
            "mission_succeeded_evaluator_failed": sum(1 for r in rows
                                                      if r.get("code_name") == "SUCCEEDED" and not r["success"]),
            "starts_not_localised": starts_not_localised(rows),
            "fetch_s_median": round(percentile(times, 50), 1) if times else None,
            "fetch_s_p90": round(percentile(times, 90), 1) if times else None,
            "rss_slope_mb_per_fetch_max": max((v["rss_slope_mb_per_fetch"] for v in per_node.values()), default=None),
            "rss_slope_second_half_max": ({"node": worst_half, "mb_per_fetch": slopes[worst_half]}
                                          if worst_half else None),
            "fds_change_max": max((v["fds_change"] for v in per_node.values()), default=None),
            "threads_change_max": max((v["threads_change"] for v in per_node.values()), default=None),
            "restarts": sum(v["restarts"] or 0 for v in per_node.values()),
            # from the first fetch's start to the last one's end (rows stamp each fetch's end)
            "wall_min": (round((rows[-1]["time"] - rows[0]["time"] + rows[0].get("wall_s", 0.0)) / 60, 1)
                         if rows and "time" in rows[0] and "time" in rows[-1] else None),
            "nodes": per_node}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fetches", type=int, default=50)
    p.add_argument("--layouts", type=int, default=20, help="seeds 0..N-1, cycled")
    p.add_argument("--timeout", type=float, default=400.0)
    p.add_argument("--out", default=str(ROOT / "out" / "soak"))
    p.add_argument("--resume", action="store_true", help="continue the count of an interrupted soak")
    add_record_argument(p)
    a = p.parse_args(argv)
    commit = commit_of(ROOT)   # the code this soak starts (commits made while it runs are not in it)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "soak.jsonl"
    rows = ([json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            if a.resume and log.exists() else [])
    if not a.resume:
        log.write_text("")

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from rlstack_common.background_spin import BackgroundSpin

    from .graph import FetchGraph, use_private_domain
    from .harness import FetchHarness

    domain_lease = use_private_domain()   # noqa: F841 (held until the process exits)

    from rclpy.signals import SignalHandlerOptions

    # Ctrl-C stops the soak with its summary, as in rlstack_mission.evaluate: rclpy's own handler would
    # shut its context down under the waiting harness, which then failed with an RCLError instead
    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)

    def interrupt(signum, _frame):   # SIGTERM as Ctrl-C: the graph is stopped, the summary written
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    node = rclpy.create_node("fetch_soak")
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spin = BackgroundSpin(executor)   # stopped and joined before exit (rlstack_common.background_spin)
    run = max((r.get("graph_run", 0) for r in rows), default=-1) + 1
    try:
        with FetchGraph(ROOT, out / f"graph_{run}.log") as graph:
            graph.wait_ready(node)
            harness = FetchHarness(node)
            while len(rows) < a.fetches:
                i = len(rows)
                layout = harness.layout(i % a.layouts, str(ROOT / "maps" / "home.yaml"))
                try:
                    harness.apply(layout)
                    r = harness.fetch(layout, a.timeout)
                except (TimeoutError, RuntimeError) as exc:
                    if graph.proc.poll() is not None:   # a required node died: the graph stopped
                        stopped = (f"the graph stopped after {i} fetch(es) of this run (runner exit code "
                                   f"{graph.proc.returncode}; log: {out / f'graph_{run}.log'})")
                        print(stopped, flush=True)
                        rows.append({"i": i, "graph_run": run, "seed": layout.seed, "success": False,
                                     "code_name": "GRAPH_STOPPED", "reason": stopped, "wall_s": 0.0, "usage": {},
                                     "time": time.time()})
                        with open(log, "a") as f:
                            f.write(json.dumps(rows[-1]) + "\n")
                        break
                    r = {"success": False, "code_name": "HARNESS_ERROR", "reason": str(exc), "wall_s": 0.0}
                row = {"i": i, "graph_run": run, "seed": layout.seed, "success": r["success"],
                       "code_name": r["code_name"], "reason": r["reason"][:200], "wall_s": r["wall_s"],
                       # the evaluator's view: a fetch the mission calls SUCCEEDED can still fail here
                       # (object not within the drop-off tolerance, or not on the floor)
                       "target": r.get("target"), "object_final": r.get("object_final"),
                       "dropoff_error_m": r.get("dropoff_error_m"), "grasp_attempts": r.get("grasp_attempts"),
                       "start_localised": r.get("start_localised"),
                       "usage": node_usage(graph.proc.pid), "time": time.time()}
                rows.append(row)
                with open(log, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"fetch {i:3d} seed {layout.seed:2d} {r['code_name']:14s} {r['wall_s']:6.1f} s  "
                      + "  ".join(f"{n} {u['rss_mb']:.0f} MB" for n, u in sorted(row["usage"].items())), flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {len(rows)} fetch(es); --resume continues", flush=True)
    finally:
        spin.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    this_run = [r for r in rows if r["graph_run"] == run]
    summary = {"all": summarize(rows), "this_graph_run": summarize(this_run)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    if a.record:
        record(a.record, summary["all"], command=command_line("rlstack_mission.soak"), root=ROOT, commit=commit)
    return 0 if rows and summary["all"]["success_rate"] >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
