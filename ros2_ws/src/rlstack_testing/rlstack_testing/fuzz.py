"""Fuzzing a running graph's subscribers and services with hostile input.

:func:`fuzz_graph` finds every topic the graph's nodes subscribe to and every service they
offer (ROS graph introspection: nothing is listed by hand, so a new subscriber is fuzzed the
day it is added), sends each the hostile messages of :mod:`rlstack_testing.hostile`, a pair of
messages whose stamps run backwards, and a flood at far more than any sensor's rate, and
checks after each topic and service that every process still runs. At the end every node
must still answer a parameter request (alive *and* spinning), and the ``rejected*`` counters
the nodes publish on ``/diagnostics`` show what they turned away.

The caller owns the graph and an rclpy node on its domain (the test's probe, or the CLI
``python -m rlstack_testing.fuzz``, which starts the robot-side fetch graph itself).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .hostile import hostile_messages, plausible
from .processes import NodeDeaths

#: not fuzzed: the middleware's and rclpy's own endpoints (parameters, type descriptions, logs)
#: and actions' internal services (their goals would start real work; fuzzed through an action client
#: by the mission's and navigation's own tests)
SKIP_TOPICS = ("/rosout", "/parameter_events", "/clock")
SKIP_SERVICE_PARTS = ("/_action/", "/describe_parameters", "/get_parameter_types", "/get_parameters",
                      "/list_parameters", "/set_parameters", "/set_parameters_atomically",
                      "/get_type_description")


def load_type(type_str: str) -> type:
    """``sensor_msgs/msg/Image`` -> the class."""
    pkg, kind, name = type_str.split("/")
    module = importlib.import_module(f"{pkg}.{kind}")
    if kind == "action" and "_" in name:    # an action's own topic type, e.g. NavigateTo_FeedbackMessage
        action, _, part = name.rpartition("_")
        return getattr(getattr(module, action).Impl, part)
    return getattr(module, name)


@dataclass
class TargetReport:
    """What one topic or service received and what it did to the graph."""

    name: str
    type: str
    nodes: List[str]
    sent: Dict[str, int] = field(default_factory=dict)    # kind -> messages or calls
    answered: int = 0           # services: calls that got a response
    flood_rate_hz: float = 0.0  # topics: the rate the flood reached
    crashed: List[str] = field(default_factory=list)      # processes dead after this target


@dataclass
class FuzzReport:
    targets: List[TargetReport] = field(default_factory=list)
    responsive: Dict[str, bool] = field(default_factory=dict)   # node -> answered a parameter request after
    rejected_before: Dict[str, Dict[str, int]] = field(default_factory=dict)
    rejected_after: Dict[str, Dict[str, int]] = field(default_factory=dict)
    crashes: List[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> Dict[str, Any]:
        return {
            "targets": [t.__dict__ for t in self.targets],
            "responsive": self.responsive,
            "rejected_before": self.rejected_before,
            "rejected_after": self.rejected_after,
            "crashes": self.crashes,
            "seconds": round(self.seconds, 1),
            "inputs_total": sum(sum(t.sent.values()) for t in self.targets),
        }


def _spin(node: Any, executor: Any, seconds: float) -> None:
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        executor.spin_once(timeout_sec=min(left, 0.02))


#: diagnostics keys that count input a node turned away: ``rejected*`` (localizer, nav_controller,
#: policy_node, mission), ``skipped_*`` / ``frames_skipped`` (semantic_map's frames), ``bad_tf`` and
#: ``answered_bad_input`` (grasp_pose)
TURNED_AWAY = ("rejected", "skipped_", "frames_skipped", "bad_tf", "answered_bad_input")


def _answered(executor: Any, future: Any, timeout_s: float) -> bool:
    """Spin until ``future`` completes or ``timeout_s`` passes; whether it completed without an error."""
    end = time.monotonic() + timeout_s
    while not future.done() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)
    return future.done() and future.exception() is None


def _rejected_counts(statuses: Dict[str, Any]) -> Dict[str, Dict[str, int]]:
    """``/diagnostics`` status name -> its counts of turned-away input (the last of each status)."""
    out: Dict[str, Dict[str, int]] = {}
    for name, status in statuses.items():
        counts = {}
        for kv in status.values:
            if kv.key.startswith(TURNED_AWAY):
                try:
                    counts[kv.key] = int(float(kv.value))
                except ValueError:
                    continue
        if counts:
            out[name] = counts
    return out


def discover(node: Any, node_names: Sequence[Tuple[str, str]]) -> Tuple[Dict[str, Tuple[str, List[str]]],
                                                                        Dict[str, Tuple[str, List[str]]]]:
    """Topics the nodes subscribe to and services they offer: name -> (type, [node, ...])."""
    topics: Dict[str, Tuple[str, List[str]]] = {}
    services: Dict[str, Tuple[str, List[str]]] = {}
    for name, ns in node_names:
        fqn = ns.rstrip("/") + "/" + name
        for topic, types in node.get_subscriber_names_and_types_by_node(name, ns):
            if topic in SKIP_TOPICS:
                continue
            entry = topics.setdefault(topic, (types[0], []))
            entry[1].append(fqn)
        for srv, types in node.get_service_names_and_types_by_node(name, ns):
            if any(part in srv for part in SKIP_SERVICE_PARTS):
                continue
            entry = services.setdefault(srv, (types[0], []))
            entry[1].append(fqn)
    return topics, services


def _publisher_qos(node: Any, topic: str) -> Any:
    """A QoS every subscriber of ``topic`` accepts: reliable, and transient local when one asks
    for it (a volatile writer never reaches a transient-local reader)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    durability = DurabilityPolicy.VOLATILE
    for info in node.get_subscriptions_info_by_topic(topic):
        if info.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL:
            durability = DurabilityPolicy.TRANSIENT_LOCAL
    return QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=durability)


def fuzz_graph(node: Any, executor: Any, node_names: Sequence[Tuple[str, str]],
               dead: Callable[[], List[str]], repeats: int = 3, flood_s: float = 2.0,
               settle_s: float = 0.3, call_timeout_s: float = 5.0,
               log: Callable[[str], None] = lambda s: None) -> FuzzReport:
    """Fuzz every subscriber and service of ``node_names`` (``(name, namespace)`` pairs).

    ``node``/``executor``: an rclpy node on the graph's domain and the executor spinning it.
    ``dead()``: names of the graph's processes that are no longer running (checked after each
    target). ``repeats``: each hostile message is sent this many times (a reader that keeps
    state, e.g. a frame pairer, sees it more than once).
    """
    from diagnostic_msgs.msg import DiagnosticArray
    from rcl_interfaces.srv import GetParameters

    report = FuzzReport()
    t_start = time.monotonic()
    statuses: Dict[str, Any] = {}

    def on_diag(msg: Any) -> None:
        for st in msg.status:
            statuses[st.name] = st

    diag_sub = node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 100)
    _spin(node, executor, 2.5)   # every node publishes diagnostics at >= 1 Hz
    report.rejected_before = _rejected_counts(statuses)
    topics, services = discover(node, node_names)
    log(f"fuzzing {len(topics)} topics and {len(services)} services of {len(node_names)} nodes")

    for topic, (type_str, readers) in sorted(topics.items()):
        cls = load_type(type_str)
        target = TargetReport(topic, type_str, readers)
        pub = node.create_publisher(cls, topic, _publisher_qos(node, topic))
        deadline = time.monotonic() + 10.0
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            _spin(node, executor, 0.05)
        cases = hostile_messages(cls)
        now = time.time()
        # stamps that run backwards: a good message, then one 10 s older (out of order / time jump)
        newer, older = plausible(cls, now), plausible(cls, now - 10.0)
        if newer != older:
            cases += [("stamp_backwards", newer), ("stamp_backwards", older)]
        for kind, msg in cases:
            for _ in range(repeats):
                pub.publish(msg)
                target.sent[kind] = target.sent.get(kind, 0) + 1
            _spin(node, executor, 0.05)   # readers keep a few messages: let them take these first
        _spin(node, executor, settle_s)
        # a flood of plausible messages (as fast as this process can publish them)
        flood_msg = plausible(cls)
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < flood_s:
            pub.publish(flood_msg)
            n += 1
            if n % 50 == 0:
                executor.spin_once(timeout_sec=0.0)
        target.flood_rate_hz = round(n / max(time.monotonic() - t0, 1e-6), 1)
        target.sent["flood"] = n
        _spin(node, executor, settle_s)
        target.crashed = dead()
        node.destroy_publisher(pub)
        report.targets.append(target)
        log(f"{topic} ({type_str}): {sum(target.sent.values())} messages, flood {target.flood_rate_hz:.0f} Hz"
            + (f"; DEAD: {target.crashed}" if target.crashed else ""))
        report.crashes += [f"{c} after {topic}" for c in target.crashed]
        if "runner exited" in target.crashed:
            break
        if target.crashed:
            _spin(node, executor, 3.0)   # respawned nodes come back before the next target

    if not any("runner exited" in c for c in report.crashes):
        for srv, (type_str, owners) in sorted(services.items()):
            cls = load_type(type_str)
            target = TargetReport(srv, type_str, owners)
            client = node.create_client(cls, srv)
            if not client.wait_for_service(timeout_sec=5.0):
                node.destroy_client(client)
                continue
            for kind, req in hostile_messages(cls.Request):
                future = client.call_async(req)
                target.sent[kind] = target.sent.get(kind, 0) + 1
                if _answered(executor, future, call_timeout_s):
                    target.answered += 1
                else:
                    client.remove_pending_request(future)
            _spin(node, executor, settle_s)
            target.crashed = dead()
            node.destroy_client(client)
            report.targets.append(target)
            log(f"{srv} ({type_str}): {target.answered}/{sum(target.sent.values())} calls answered"
                + (f"; DEAD: {target.crashed}" if target.crashed else ""))
            report.crashes += [f"{c} after {srv}" for c in target.crashed]
            if "runner exited" in target.crashed:
                break

    # alive and spinning: every node answers a parameter request
    for name, ns in node_names:
        fqn = ns.rstrip("/") + "/" + name
        client = node.create_client(GetParameters, f"{fqn}/get_parameters")
        ok = client.wait_for_service(timeout_sec=5.0)
        if ok:
            ok = _answered(executor, client.call_async(GetParameters.Request(names=["use_sim_time"])), call_timeout_s)
        report.responsive[fqn] = bool(ok)
        node.destroy_client(client)
    statuses.clear()
    _spin(node, executor, 2.5)
    report.rejected_after = _rejected_counts(statuses)
    node.destroy_subscription(diag_sub)
    report.seconds = time.monotonic() - t_start
    return report


def activate_lifecycle_nodes(node: Any, executor: Any, node_names: Sequence[Tuple[str, str]],
                             log: Callable[[str], None] = lambda s: None) -> None:
    """Configure and activate every lifecycle node among ``node_names`` (a lifecycle node makes its
    observation subscriptions when configured: fuzz what it reads when it runs)."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    for name, ns in node_names:
        fqn = ns.rstrip("/") + "/" + name
        if not any(srv == f"{fqn}/change_state" for srv, _ in node.get_service_names_and_types_by_node(name, ns)):
            continue
        client = node.create_client(ChangeState, f"{fqn}/change_state")
        for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            future = client.call_async(ChangeState.Request(transition=Transition(id=transition)))
            ok = _answered(executor, future, 30.0) and future.result().success
            log(f"{fqn}: lifecycle transition {transition} {'ok' if ok else 'FAILED'}")
        node.destroy_client(client)
    _spin(node, executor, 1.0)


def table(report: FuzzReport) -> str:
    """Markdown table: per target, inputs sent and the outcome."""
    lines = ["| target | type | read by | inputs | outcome |", "|---|---|---|---|---|"]
    for t in report.targets:
        inputs = sum(t.sent.values())
        if t.crashed:
            outcome = "CRASHED: " + ", ".join(t.crashed)
        elif t.type.split("/")[1] == "srv":
            outcome = f"no crash; {t.answered}/{inputs} answered"
        else:
            outcome = f"no crash (flood {t.flood_rate_hz:.0f} Hz)"
        lines.append(f"| `{t.name}` | `{t.type}` | {', '.join(t.nodes)} | {inputs} | {outcome} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ CLI

ROBOT_GRAPH_ARGS = ("sim:=false", "use_sim_time:=false")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Start the robot-side fetch graph, fuzz it, print a table and JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m rlstack_testing.fuzz",
        description="Start a graph (default: the robot side of launch/fetch.launch.yaml, no simulator), "
                    "fuzz every subscriber and service with hostile input, and report crashes.")
    parser.add_argument("--launch", default=None, help="launch file (default: launch/fetch.launch.yaml)")
    parser.add_argument("--graph-arg", action="append", default=None,
                        help="launch argument NAME:=VALUE (default: sim:=false use_sim_time:=false)")
    parser.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "57")))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--flood-s", type=float, default=2.0)
    parser.add_argument("--json", default="out/fuzz/results.json")
    args = parser.parse_args(argv)

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    repo = Path(__file__).resolve()
    while repo != repo.parent and not (repo / "launch").is_dir():
        repo = repo.parent
    launch = Path(args.launch) if args.launch else repo / "launch" / "fetch.launch.yaml"
    env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain))
    log_path = Path(args.json).with_suffix(".graph.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as graph_log:
        runner = subprocess.Popen([sys.executable, "-m", "rlstack_launch", str(launch), "--grace", "5",
                                   *(args.graph_arg or ROBOT_GRAPH_ARGS)],
                                  env=env, stdout=graph_log, stderr=subprocess.STDOUT, start_new_session=True)
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=args.domain)
        node = rclpy.create_node("fuzzer", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            # the graph's nodes: whoever shows up in the first seconds (wait until the count is steady)
            # the graph's nodes and their endpoints: wait until both stop changing (a node shows up
            # before its constructor has made its services: the semantic map loads its text model first)
            names: List[Tuple[str, str]] = []
            shape: Any = None
            steady_since = time.monotonic()
            end = time.monotonic() + 120.0
            while time.monotonic() < end:
                _spin(node, executor, 0.5)
                found = sorted(n for n in node.get_node_names_and_namespaces() if n[0] != "fuzzer")
                now_shape = (found, discover(node, found)) if found else None
                if now_shape != shape or now_shape is None:
                    names, shape, steady_since = found, now_shape, time.monotonic()
                    continue
                # every node has made its readers or services (not just its parameter services)
                endpoints = {n for _, owners in (*shape[1][0].values(), *shape[1][1].values()) for n in owners}
                if all("/" + n in endpoints for n, _ in names) and time.monotonic() - steady_since > 5.0:
                    break
            print(f"graph nodes: {[n for n, _ in names]}", flush=True)

            activate_lifecycle_nodes(node, executor, names, log=lambda s: print(s, flush=True))
            dead = NodeDeaths(runner.pid)
            report = fuzz_graph(node, executor, names, dead, repeats=args.repeats, flood_s=args.flood_s,
                                log=lambda s: print(s, flush=True))
        finally:
            executor.shutdown()
            node.destroy_node()
            rclpy.shutdown(context=context)
            if runner.poll() is None:
                os.killpg(runner.pid, 2)
                try:
                    runner.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(runner.pid, 9)
    result = report.as_dict()
    result["launch"] = str(launch)
    result["graph_args"] = list(args.graph_arg or ROBOT_GRAPH_ARGS)
    Path(args.json).write_text(json.dumps(result, indent=2))
    print(table(report))
    print(f"inputs {result['inputs_total']}, crashes {len(report.crashes)}, "
          f"responsive {sum(report.responsive.values())}/{len(report.responsive)}, {report.seconds:.0f} s; "
          f"JSON: {args.json}")
    return 1 if report.crashes or not all(report.responsive.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
