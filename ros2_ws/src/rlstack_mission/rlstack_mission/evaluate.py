"""``python -m rlstack_mission.evaluate [--layouts 20]``: the fetch mission over seeded layouts.

Starts the fetch graph once (launch/fetch.launch.yaml, realtime PyBullet, perception, navigation,
the lift controller and the mission), then for each seed: resets the simulator to the seed's
layout (:mod:`rlstack_mission.layouts`: the home scene's seeded placement of all twelve objects,
the target cube moved to a reachable spot on a table; the query names its colour), clears the
semantic map, sends the fetch and judges it from ground truth (:mod:`rlstack_mission.harness`:
the mission must report success *and* the object must rest within 0.35 m of the drop-off).

Writes ``out/fetch_eval/results.json`` (every episode, with its feedback trail) and prints a
table, the success rate, failure reasons and time per fetch; ``--record docs/results/<name>.json``
also writes the summary with its command, commit, date and hardware (docs/results.md).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from rlstack_common.results_record import add_record_argument, command_line, commit_of, record
from rlstack_perception.map_audit import map_audit_line, map_audit_summary

from .fetch import PHASES, STEPS

ROOT = Path(__file__).resolve().parents[4] if (Path(__file__).resolve().parents[4] / "launch").is_dir() else Path.cwd()


def _run_layouts(a, harness, episodes: list) -> None:
    """Apply, fetch and print each seed's layout; every finished episode is appended to ``episodes``
    and written to results.json at once (an interrupted run keeps them)."""
    out = Path(a.out)
    for seed in range(a.seed_base, a.seed_base + a.layouts):
        layout = harness.layout(seed, str(ROOT / "maps" / "home.yaml"), support=a.support, kind=a.kind)
        harness.apply(layout)
        if harness.start_localised is False:
            print(f"seed {seed:3d}  the localiser's estimate did not come within 5 cm / 0.05 rad of the truth "
                  "in 10 s after the reset: this fetch starts on it anyway", flush=True)
        x, y, z, yaw = layout.target_pose
        print(f"seed {seed:3d}  {layout.target} placed at ({x:.3f}, {y:.3f}, {z:.3f}) m, yaw "
              f"{math.degrees(yaw):.0f} deg (the evaluator's truth; the mission logs its own estimate)", flush=True)
        r = harness.fetch(layout, a.timeout)
        episodes.append(r)
        loc = (f"  localisation error median {100 * r['loc_error_median_m']:.1f} / max "
               f"{100 * r['loc_error_max_m']:.1f} cm, LOST {r['localization_lost_events']}x"
               if "loc_error_median_m" in r else "")
        print(f"seed {seed:3d}  {layout.query:18s} {layout.table:8s} -> {r['code_name']:12s} "
              f"{'ok ' if r['success'] else 'FAIL'} {r['wall_s']:6.1f} s  drop-off error "
              f"{r['dropoff_error_m']:.2f} m{loc}  {'' if r['success'] else r['reason']}", flush=True)
        if not r["success"]:   # what navigation's sensors had marked, to see what blocked it
            saved = harness.save_obstacle_grid(out / f"obstacles_seed{seed}")
            if saved:
                print(f"          navigation's sensed obstacles at the end: {saved}", flush=True)
        audit = map_audit_line(r)   # the semantic map at the fetch's end against the truth
        if audit:
            print(f"          {audit}", flush=True)
        for i, g in enumerate(r.get("grasp_target_errors", []), 1):
            bx, by = g["object_in_base_link_m"]
            print(f"          lift {i}: object at ({bx:.2f}, {by:+.2f}) m in base_link, held target off it by "
                  f"{g['xy_mm']:.1f} mm in x/y ({g['dx_mm']:+.1f}, {g['dy_mm']:+.1f}), {g['dz_mm']:+.1f} mm in z, "
                  f"{g['yaw_deg']:+.1f} deg", flush=True)
            end = g.get("at_end")
            if end:
                print(f"                  {end['t_s'] - g['t_s']:.1f} s later, before the object rose: off by "
                      f"{end['xy_mm']:.1f} mm ({end['dx_mm']:+.1f}, {end['dy_mm']:+.1f}), {end['dz_mm']:+.1f} mm in z",
                      flush=True)
        (out / "results.json").write_text(json.dumps({"episodes": episodes}, indent=1))




def percentile(values: list, q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def phase_stats(successes: list, key: str = "phase_durations", names: Sequence[str] = PHASES) -> dict:
    """Seconds per mission phase (``key="step_durations"``, ``names=STEPS``: per step) over successful
    fetches: median, p90 and mean of each (0 where a fetch did not pass through it), to show where the
    time of a fetch goes. Names no fetch passed through are left out."""
    stats = {}
    for name in names:
        values = [e.get(key, {}).get(name, 0.0) for e in successes]
        if not any(values) and names is not PHASES:
            continue
        stats[name] = {"median": round(statistics.median(values), 1), "p90": round(percentile(values, 90), 1),
                       "mean": round(statistics.mean(values), 1)}
    return stats


def starts_not_localised(rows: Sequence[dict]) -> Optional[int]:
    """How many fetches started before the localiser agreed with the truth (harness.wait_localised
    timed out); None when no row recorded it (rows from before it was recorded: unknown, not zero)."""
    if not any("start_localised" in r for r in rows):
        return None
    return sum(1 for r in rows if r.get("start_localised") is False)


def summarize(episodes: list, wall_time_s: float, ground_truth_grasp: bool, graph_args: dict, cpu_share: dict,
              support: str, interrupted: bool) -> dict:
    """The results.json summary of a list of episodes (one run, or the merged shards of a Ray run)."""
    ok = [e for e in episodes if e["success"]]
    reasons = collections.Counter(f"{e['code_name']}: {e['reason'][:80]}" for e in episodes if not e["success"])
    times = [e["wall_s"] for e in ok]
    loc_eps = [e for e in episodes if "loc_error_median_m" in e]
    lifts = [g for e in episodes for g in e.get("grasp_target_errors", [])]
    summary = {
        "layouts": len(episodes), "succeeded": len(ok),
        "success_rate": round(len(ok) / len(episodes), 3) if episodes else 0.0,
        "failure_reasons": dict(reasons),
        "time_per_successful_fetch_s": {"mean": round(statistics.mean(times), 1),
                                        "median": round(statistics.median(times), 1),
                                        "p90": round(percentile(times, 90), 1), "max": round(max(times), 1)}
        if times else None,
        "grasp_attempts": dict(collections.Counter(str(e.get("grasp_attempts", "?")) for e in episodes)),
        "starts_not_localised": starts_not_localised(episodes),
        "mean_dropoff_error_m": round(statistics.mean(e["dropoff_error_m"] for e in ok), 3) if ok else None,
        "phase_means_s": {ph: round(statistics.mean(e["phase_durations"].get(ph, 0.0) for e in ok), 1)
                          for ph in PHASES} if ok else {},
        "phase_s": phase_stats(ok) if ok else {},
        "step_s": phase_stats(ok, "step_durations", STEPS) if ok else {},
        "wall_time_s": round(wall_time_s, 1),
        "mode": "ground-truth grasp (ablation)" if ground_truth_grasp else "robot (grasp from perception)",
        "graph_args": graph_args,
        # the localiser judged against the sim's truth (when it ran): per-episode medians / p95s / maxima
        "localization": {
            "episode_error_median_m_median": round(statistics.median(e["loc_error_median_m"] for e in loc_eps), 4),
            "episode_error_p95_m_max": max(e["loc_error_p95_m"] for e in loc_eps),
            "error_max_m": max(e["loc_error_max_m"] for e in loc_eps),
            "heading_error_max_deg": max(e["loc_heading_error_max_deg"] for e in loc_eps),
            "lost_events": sum(e["localization_lost_events"] for e in loc_eps),
        } if loc_eps else None,
        # the held /grasp_target each lift started from, against the object's truth in the true base_link
        "grasp_target_error": {
            "lifts": len(lifts),
            "xy_mm_median": round(statistics.median(g["xy_mm"] for g in lifts), 1),
            "xy_mm_max": max(g["xy_mm"] for g in lifts),
            "z_mm_median": round(statistics.median(g["dz_mm"] for g in lifts), 1),
            "yaw_deg_abs_max": max(abs(g["yaw_deg"]) for g in lifts),
        } if lifts else None,
        # the semantic map at each fetch's end against the truth: label accuracy, duplicates, phantoms
        "map_audit": map_audit_summary(episodes),
        # each node's CPU time over the evaluation's wall time (1.0 = one core busy; this machine: 2 cores)
        "cpu_share_of_one_core": cpu_share,
        "support": support,
        "interrupted": interrupted,
    }
    return summary


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layouts", type=int, default=20, help="number of seeded layouts (seeds seed-base ...)")
    p.add_argument("--seed-base", type=int, default=0)
    p.add_argument("--out", default=str(ROOT / "out" / "fetch_eval"))
    add_record_argument(p)
    p.add_argument("--timeout", type=float, default=600.0, help="per fetch, s")
    p.add_argument("--ground-truth-grasp", action="store_true",
                   help="the labelled ablation (fetch.launch.yaml robot_mode:=false): grasp on the simulator's live "
                        "pose. By default the robot grasps from perception; the evaluator judges from ground truth")
    p.add_argument("--robot-mode", action="store_true", help=argparse.SUPPRESS)   # the default now
    p.add_argument("--support", choices=("table", "floor"), default="table",
                   help="where the target cube is put: on a table (default, the evaluation's usual layouts) or on "
                        "the open floor")
    p.add_argument("--kind", default="cube",
                   help="what is fetched: cube (default), or another kind of object (lego, mug, duck, ...: "
                        "sim_bridges/README.md, 'Mesh objects and kinds'); other kinds than cube, ball and cylinder "
                        "run the graph on the scene home_kinds (home's furniture and objects, and one of every kind)")
    p.add_argument("--backend", choices=("pybullet", "mujoco"), default="pybullet",
                   help="simulator engine of the fetch graph (fetch.launch.yaml backend:=...): the same home scene "
                        "on PyBullet (default) or MuJoCo")
    p.add_argument("--graph-arg", action="append", default=[], metavar="NAME:=VALUE",
                   help="a launch argument of fetch.launch.yaml, e.g. depth_noise:=true (repeatable)")
    g = p.add_argument_group("Ray (docs/guides/scale-out-on-ray.md)")
    g.add_argument("--ray-workers", type=int, default=0, metavar="N",
                   help="shard the layouts over N Ray workers, each running its own fetch graph on its own ROS domain "
                        "(0: this process runs them all, the default)")
    g.add_argument("--address", help="a running Ray cluster ('auto' or <head>:6379); default: a local Ray instance")
    g.add_argument("--cpus-per-worker", type=float, default=2.0,
                   help="CPUs Ray reserves per worker (a fetch graph keeps ~2 cores busy; default 2)")
    a = p.parse_args(argv)
    if a.layouts < 1:
        p.error("--layouts must be >= 1")
    if a.ray_workers < 0:
        p.error("--ray-workers must be >= 0")
    if a.ray_workers:
        return _main_ray(a, p)

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from rlstack_common.background_spin import BackgroundSpin

    from .graph import FetchGraph, use_private_domain
    from .harness import FetchHarness

    domain_lease = use_private_domain()   # noqa: F841 (held until the process exits)
    commit = commit_of(ROOT)   # the code this run starts (commits made while it runs are not in it)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    from rclpy.signals import SignalHandlerOptions

    # Ctrl-C and SIGTERM stop the run at once: the graph is stopped and the layouts done so far are
    # summarised. (rclpy's own handlers only shut its context down; the main thread, waiting on a
    # fetch, went on waiting, and the run had to be killed.)
    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)   # our argv is not for rcl
    signal.signal(signal.SIGTERM, _interrupt)
    node = rclpy.create_node("fetch_evaluation")
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spin = BackgroundSpin(executor)   # stopped and joined before exit (rlstack_common.background_spin)
    episodes = []
    interrupted = False
    t_start = time.monotonic()
    try:
        graph_args = _graph_args(a, p)
        with FetchGraph(ROOT, out / "graph.log", graph_args) as graph:
            ready_s = graph.wait_ready(node)
            print(f"fetch graph ready in {ready_s:.1f} s", flush=True)
            harness = FetchHarness(node)
            cpu0, cpu_t0 = graph.cpu_seconds(), time.monotonic()
            try:
                _run_layouts(a, harness, episodes)
            except KeyboardInterrupt:
                interrupted = True
                print(f"interrupted after {len(episodes)} layout(s): stopping the graph", flush=True)
            cpu1, cpu_t1 = graph.cpu_seconds(), time.monotonic()
    except KeyboardInterrupt:   # while the graph started
        print("interrupted before the first layout: the graph is stopped", flush=True)
        return 130
    finally:
        spin.stop()
        node.destroy_node()
        rclpy.try_shutdown()
    cpu_share = ({k: round((cpu1[k] - cpu0.get(k, 0.0)) / (cpu_t1 - cpu_t0), 3) for k in sorted(cpu1)}
                 if episodes else {})
    summary = summarize(episodes, time.monotonic() - t_start, a.ground_truth_grasp, graph_args, cpu_share,
                        a.support, interrupted)
    (out / "results.json").write_text(json.dumps({"summary": summary, "episodes": episodes}, indent=1))
    print(json.dumps(summary, indent=1))
    if a.record:
        record(a.record, summary, command=command_line("rlstack_mission.evaluate"), root=ROOT, commit=commit)
    if interrupted:
        return 130
    return 0 if episodes and summary["succeeded"] == len(episodes) else 1


# ---------------------------------------------------------------------------- sharded over Ray
def _graph_args(a, p) -> dict:
    from sim_bridges.scenes.kinds import BASIC_KINDS

    graph_args = {"robot_mode": "false"} if a.ground_truth_grasp else {}
    if a.backend != "pybullet":
        graph_args["backend"] = a.backend
    if a.backend == "mujoco":
        # the arm spreads each 20 Hz command over 50 ms: under the 60 Hz bridge the 16.7 ms jerks
        # flung held cubes out of MuJoCo's soft grasp (3 of 26 stows in tools/probes/stow_rate_check.py;
        # 26 of 26 held with 0.05). --graph-arg arm_step_period_s:=0 gives the bridge default.
        graph_args["arm_step_period_s"] = "0.05"
    if a.kind not in BASIC_KINDS:   # home holds only these; home_kinds one object of every other kind
        graph_args["scene"] = "home_kinds"
    for item in a.graph_arg:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            p.error(f"--graph-arg takes NAME:=VALUE, got {item!r}")
        graph_args[name] = value
    return graph_args


def run_shard(seed_base: int, layouts: int, passthrough: list) -> dict:
    """One Ray worker's share: ``python -m rlstack_mission.evaluate`` over ``layouts`` seeds from
    ``seed_base``, in a subprocess on a ROS domain leased on this machine (no other graph or test
    here shares it), into a private folder; returns its results.json, log tail, domain and host."""
    import os
    import socket
    import subprocess
    import tempfile

    from rlstack_testing.domain import lease_domain_id

    with lease_domain_id() as lease, tempfile.TemporaryDirectory(prefix="fetch-shard-") as tmp:
        env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id))
        cmd = [sys.executable, "-m", "rlstack_mission.evaluate", "--layouts", str(layouts), "--seed-base",
               str(seed_base), "--out", tmp, *passthrough]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        results = Path(tmp, "results.json")
        data = json.loads(results.read_text()) if results.is_file() else {"episodes": []}
        return {"seed_base": seed_base, "layouts": layouts, "domain_id": lease.domain_id,
                "host": socket.gethostname(), "returncode": proc.returncode, "wall_s": round(time.monotonic() - t0, 1),
                "log_tail": proc.stdout[-6000:], "episodes": data.get("episodes", []), "summary": data.get("summary")}


def _main_ray(a, p) -> int:
    """The layouts cut into ``--ray-workers`` contiguous seed ranges, each run by :func:`run_shard`
    as a Ray task; the episodes are merged (in seed order) into one results.json and summary."""
    from rlstack_common.ray_cluster import RayUnavailable, init_ray, shards, shutdown

    graph_args = _graph_args(a, p)
    passthrough = ["--timeout", str(a.timeout), "--support", a.support, "--kind", a.kind]
    if a.ground_truth_grasp:
        passthrough.append("--ground-truth-grasp")
    for item in a.graph_arg:
        passthrough += ["--graph-arg", item]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        cluster = init_ray(a.address)
    except RayUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        import ray

        task = ray.remote(num_cpus=a.cpus_per_worker, max_retries=0)(run_shard)
        parts = shards(list(range(a.seed_base, a.seed_base + a.layouts)), a.ray_workers)
        print(f"{a.layouts} layouts in {len(parts)} shards on Ray ({cluster['nodes']} node(s), {cluster['cpus']} CPUs, "
              f"{a.cpus_per_worker:g} CPUs per worker)", flush=True)
        pending = {task.remote(part[0], len(part), passthrough): k for k, part in enumerate(parts)}
        results = [None] * len(parts)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            k = pending.pop(done[0])
            results[k] = r = ray.get(done[0])
            (out / f"shard_{k}.log").write_text(r["log_tail"])
            print(f"shard {k}: seeds {r['seed_base']}..{r['seed_base'] + r['layouts'] - 1} on {r['host']} ROS domain "
                  f"{r['domain_id']}: {sum(e['success'] for e in r['episodes'])}/{len(r['episodes'])} ok in "
                  f"{r['wall_s']:.0f} s (exit {r['returncode']})", flush=True)
            for i, e in enumerate(r["episodes"]):
                print(f"  seed {r['seed_base'] + i:3d} -> {e.get('code_name', '?'):12s} "
                      f"{'ok ' if e['success'] else 'FAIL'} {e['wall_s']:6.1f} s  "
                      f"drop-off error {e['dropoff_error_m']:.2f} m  {'' if e['success'] else e['reason']}", flush=True)
    except KeyboardInterrupt:
        print("interrupted: the Ray tasks are cancelled with the local Ray instance", flush=True)
        return 130
    finally:
        shutdown()
    episodes = [e for r in results for e in r["episodes"]]
    summary = summarize(episodes, time.monotonic() - t0, a.ground_truth_grasp, graph_args, {}, a.support,
                        interrupted=any(r["returncode"] == 130 for r in results))
    summary["ray"] = {**cluster, "workers": len(parts), "cpus_per_worker": a.cpus_per_worker,
                      "shards": [{k: r[k]
                                  for k in ("seed_base", "layouts", "host", "domain_id", "returncode", "wall_s")}
                                 | {"cpu_share_of_one_core": (r["summary"] or {}).get("cpu_share_of_one_core")}
                                 for r in results]}
    missing = a.layouts - len(episodes)
    if missing:
        summary["missing_layouts"] = missing
    (out / "results.json").write_text(json.dumps({"summary": summary, "episodes": episodes}, indent=1))
    print(json.dumps(summary, indent=1))
    if a.record:
        record(a.record, summary, command=command_line("rlstack_mission.evaluate"), root=ROOT)
    return 0 if episodes and not missing and all(e["success"] for e in episodes) else 1


if __name__ == "__main__":
    sys.exit(main())
