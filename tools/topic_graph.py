#!/usr/bin/env python3
"""Draw the running ROS 2 graph: nodes, topics, services and actions.

Connects to the graph of this shell's ``ROS_DOMAIN_ID`` (``source env.sh`` first), waits for
discovery, asks every node for its publishers, subscribers, service servers and clients, and
writes

* a Markdown file with a Mermaid flowchart (nodes as boxes, topics as rounded boxes with
  solid edges publisher --> topic --> subscriber, services and actions as hexagons with
  dashed edges client -.-> service -.-> server) and a table per node, and/or
* JSON with the same content (nodes, topics, services, actions, each with its types).

Actions appear in ROS 2 as hidden services and topics under ``<action>/_action/``; they are
folded into one action per name. By default the tool leaves out its own node, hidden nodes,
``/rosout``, ``/parameter_events``, every node's parameter and type-description services,
and hidden topics and services (``--all`` keeps them).

    python tools/topic_graph.py --wait 3 --markdown docs/reference/topic-graph.md --json out/topic_graph.json
    python tools/topic_graph.py --wait 30 --expect-node /smoke/smoke_map --json -    # JSON on stdout

``--wait`` is how long to wait for discovery. With ``--expect-node`` the tool stops waiting as
soon as those nodes are seen and the graph has not changed for ``--settle`` seconds, and it
fails (exit 1) if they are not seen within ``--wait``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

ACTION_INFIX = "/_action/"
# Topics every node has; they say nothing about the application.
INFRA_TOPICS = frozenset({"/rosout", "/parameter_events"})
# Services rclpy/rclcpp give every node (parameters, type description).
INFRA_SERVICE_SUFFIXES = (
    "/describe_parameters", "/get_parameter_types", "/get_parameters", "/list_parameters",
    "/set_parameters", "/set_parameters_atomically", "/get_type_description",
)
INFRA_SERVICE_TYPE_PREFIXES = ("rcl_interfaces/srv/", "type_description_interfaces/srv/")

# Endpoint kinds of a node snapshot (the rclpy query that fills each is in collect_snapshot).
KINDS = ("publishers", "subscribers", "servers", "clients")

Endpoints = Dict[str, List[Tuple[str, List[str]]]]   # kind -> [(name, [types])]
Snapshot = Dict[str, Endpoints]                       # fully qualified node name -> endpoints


# ====================================================================== names
def fq_name(name: str, namespace: str) -> str:
    return namespace.rstrip("/") + "/" + name


def is_hidden(name: str) -> bool:
    """A ROS name is hidden when any of its parts starts with an underscore."""
    return any(part.startswith("_") for part in name.split("/") if part)


def is_infra_service(name: str, types: Sequence[str]) -> bool:
    return name.endswith(INFRA_SERVICE_SUFFIXES) and all(t.startswith(INFRA_SERVICE_TYPE_PREFIXES) for t in types)


def action_of(name: str) -> Optional[Tuple[str, str]]:
    """``/navigate_to/_action/send_goal`` -> (``/navigate_to``, ``send_goal``); None otherwise."""
    if ACTION_INFIX not in name:
        return None
    base, _, part = name.partition(ACTION_INFIX)
    return (base or "/"), part


def action_type(types: Iterable[str]) -> List[str]:
    """The action type from its send_goal service type (``pkg/action/X_SendGoal`` -> ``pkg/action/X``)."""
    out = []
    for t in types:
        out.append(t[: -len("_SendGoal")] if t.endswith("_SendGoal") else t)
    return out


# ====================================================================== the graph model
@dataclass
class Entity:
    """A topic, service or action, with who uses it."""

    name: str
    types: List[str] = field(default_factory=list)
    sources: List[str] = field(default_factory=list)   # publishers / clients (callers)
    sinks: List[str] = field(default_factory=list)     # subscribers / servers

    def add_types(self, types: Iterable[str]) -> None:
        for t in types:
            if t not in self.types:
                self.types.append(t)


@dataclass
class NodeInfo:
    name: str
    publishers: List[str] = field(default_factory=list)
    subscribers: List[str] = field(default_factory=list)
    service_servers: List[str] = field(default_factory=list)
    service_clients: List[str] = field(default_factory=list)
    action_servers: List[str] = field(default_factory=list)
    action_clients: List[str] = field(default_factory=list)


@dataclass
class Graph:
    nodes: Dict[str, NodeInfo] = field(default_factory=dict)
    topics: Dict[str, Entity] = field(default_factory=dict)
    services: Dict[str, Entity] = field(default_factory=dict)
    actions: Dict[str, Entity] = field(default_factory=dict)

    def to_json(self) -> dict:
        def ent(kind_src: str, kind_sink: str, e: Entity) -> dict:
            return {"name": e.name, "types": e.types, kind_src: sorted(e.sources), kind_sink: sorted(e.sinks)}

        return {
            "nodes": [dict(vars(self.nodes[n])) for n in sorted(self.nodes)],
            "topics": [ent("publishers", "subscribers", self.topics[t]) for t in sorted(self.topics)],
            "services": [ent("clients", "servers", self.services[s]) for s in sorted(self.services)],
            "actions": [ent("clients", "servers", self.actions[a]) for a in sorted(self.actions)],
        }


def _add(table: Dict[str, Entity], name: str, types: Sequence[str], node: str, side: str) -> None:
    entity = table.setdefault(name, Entity(name))
    entity.add_types(types)
    lst = entity.sources if side == "source" else entity.sinks
    if node not in lst:
        lst.append(node)


def build_graph(snapshot: Snapshot, include_all: bool = False) -> Graph:
    """Turn per-node endpoint lists into a graph; fold ``/_action/`` endpoints into actions."""
    g = Graph()
    for node_name in sorted(snapshot):
        ep = snapshot[node_name]
        info = NodeInfo(node_name)
        g.nodes[node_name] = info

        for name, types in ep.get("servers", []):
            act = action_of(name)
            if act is not None:
                if act[1] == "send_goal":
                    _add(g.actions, act[0], action_type(types), node_name, "sink")
                    info.action_servers.append(act[0])
                if not include_all:
                    continue
            if not include_all and (is_hidden(name) or is_infra_service(name, types)):
                continue
            _add(g.services, name, types, node_name, "sink")
            info.service_servers.append(name)

        for name, types in ep.get("clients", []):
            act = action_of(name)
            if act is not None:
                if act[1] == "send_goal":
                    _add(g.actions, act[0], action_type(types), node_name, "source")
                    info.action_clients.append(act[0])
                if not include_all:
                    continue
            if not include_all and (is_hidden(name) or is_infra_service(name, types)):
                continue
            _add(g.services, name, types, node_name, "source")
            info.service_clients.append(name)

        for kind, side, lst in (("publishers", "source", info.publishers), ("subscribers", "sink", info.subscribers)):
            for name, types in ep.get(kind, []):
                if not include_all and (name in INFRA_TOPICS or is_hidden(name)):
                    continue  # also drops <action>/_action/{feedback,status}: folded above
                _add(g.topics, name, types, node_name, side)
                lst.append(name)

        for attr in ("publishers", "subscribers", "service_servers", "service_clients",
                     "action_servers", "action_clients"):
            setattr(info, attr, sorted(set(getattr(info, attr))))
    return g


# ====================================================================== rendering
def _mermaid_label(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def to_mermaid(g: Graph, show_types: bool = False, direction: str = "LR") -> str:
    """A Mermaid flowchart: boxes = nodes, rounded = topics, hexagons = services/actions."""
    lines = [f"flowchart {direction}"]
    ids: Dict[Tuple[str, str], str] = {}

    def ident(kind: str, name: str) -> str:
        key = (kind, name)
        if key not in ids:
            ids[key] = f"{kind}{len([k for k in ids if k[0] == kind])}"
        return ids[key]

    def label(e: Entity, suffix: str = "") -> str:
        text = e.name + suffix
        if show_types and e.types:
            text += "<br/><small>" + ", ".join(e.types) + "</small>"
        return _mermaid_label(text)

    for n in sorted(g.nodes):
        lines.append(f"    {ident('n', n)}[{_mermaid_label(n)}]")
    for t in sorted(g.topics):
        lines.append(f"    {ident('t', t)}({label(g.topics[t])})")
    for s in sorted(g.services):
        lines.append(f"    {ident('s', s)}{{{{{label(g.services[s])}}}}}")
    for a in sorted(g.actions):
        lines.append(f"    {ident('a', a)}{{{{{label(g.actions[a], ' (action)')}}}}}")

    for t in sorted(g.topics):
        e = g.topics[t]
        for p in sorted(e.sources):
            lines.append(f"    {ident('n', p)} --> {ident('t', t)}")
        for s in sorted(e.sinks):
            lines.append(f"    {ident('t', t)} --> {ident('n', s)}")
    for kind, table in (("s", g.services), ("a", g.actions)):
        for name in sorted(table):
            e = table[name]
            for c in sorted(e.sources):
                lines.append(f"    {ident('n', c)} -.-> {ident(kind, name)}")
            for s in sorted(e.sinks):
                lines.append(f"    {ident(kind, name)} -.-> {ident('n', s)}")

    lines += [
        "    classDef rosnode fill:#dbe9f6,stroke:#2a6099,color:#000",
        "    classDef topic fill:#fff,stroke:#555,color:#000",
        "    classDef service fill:#fdf2d0,stroke:#b8860b,color:#000",
    ]
    for (kind, _name), i in ids.items():
        cls = {"n": "rosnode", "t": "topic", "s": "service", "a": "service"}[kind]
        lines.append(f"    class {i} {cls}")
    return "\n".join(lines)


def to_markdown(g: Graph, title: str, meta: dict, show_types: bool = False) -> str:
    out = [f"# {title}", ""]
    out.append(
        f"Generated by `tools/topic_graph.py` on ROS_DOMAIN_ID {meta['domain_id']} "
        f"after {meta['waited_s']:.1f} s of discovery: {len(g.nodes)} nodes, {len(g.topics)} topics, "
        f"{len(g.services)} services, {len(g.actions)} actions"
        + ("" if meta["include_all"] else " (without /rosout, /parameter_events, parameter services and hidden names)")
        + "."
    )
    out += ["", "Boxes are nodes, rounded boxes topics (publisher --> topic --> subscriber), hexagons "
                "services and actions (client -.-> service -.-> server).", ""]
    out += ["```mermaid", to_mermaid(g, show_types=show_types), "```", ""]
    out += ["| node | publishes | subscribes | serves | calls |", "|---|---|---|---|---|"]

    def cell(names: Iterable[str], suffix: str = "") -> str:
        names = list(names)
        return "<br>".join(f"`{n}`{suffix}" for n in names) if names else "-"

    for n in sorted(g.nodes):
        i = g.nodes[n]
        serves = cell(i.service_servers) if i.service_servers else ""
        acts = cell(i.action_servers, " (action)") if i.action_servers else ""
        calls = cell(i.service_clients) if i.service_clients else ""
        acts_c = cell(i.action_clients, " (action)") if i.action_clients else ""
        out.append(f"| `{n}` | {cell(i.publishers)} | {cell(i.subscribers)} | "
                   f"{'<br>'.join(x for x in (serves, acts) if x) or '-'} | "
                   f"{'<br>'.join(x for x in (calls, acts_c) if x) or '-'} |")
    out.append("")
    return "\n".join(out)


# ====================================================================== discovery (rclpy)
def collect_snapshot(node, exclude: Iterable[str] = (), include_hidden_nodes: bool = False) -> Snapshot:
    """Every node's endpoints as the graph cache of ``node`` sees them now."""
    skip = set(exclude) | {node.get_fully_qualified_name()}
    snap: Snapshot = {}
    for name, ns in node.get_node_names_and_namespaces():
        full = fq_name(name, ns)
        if full in skip or (not include_hidden_nodes and is_hidden(full)):
            continue
        ep: Endpoints = {}
        try:
            ep["publishers"] = node.get_publisher_names_and_types_by_node(name, ns)
            ep["subscribers"] = node.get_subscriber_names_and_types_by_node(name, ns)
            ep["servers"] = node.get_service_names_and_types_by_node(name, ns)
            ep["clients"] = node.get_client_names_and_types_by_node(name, ns)
        except Exception as exc:  # the node left between listing and query (NodeNameNonExistentError)
            if "NonExistent" in type(exc).__name__ or "not exist" in str(exc).lower():
                continue
            raise
        snap[full] = {k: sorted((n, sorted(t)) for n, t in v) for k, v in ep.items()}
    return snap


def discover(wait_s: float, expect: Sequence[str], settle_s: float, exclude: Sequence[str],
             include_hidden_nodes: bool) -> Tuple[Snapshot, float, List[str]]:
    """Wait for discovery, return (snapshot, seconds waited, expected nodes not seen)."""
    import rclpy

    rclpy.init(args=None)
    try:
        node = rclpy.create_node(f"topic_graph_{os.getpid()}", start_parameter_services=False,
                                 enable_rosout=False)
        try:
            t0 = time.monotonic()
            deadline = t0 + wait_s
            snap = collect_snapshot(node, exclude, include_hidden_nodes)
            stable_since = time.monotonic()
            while True:
                now = time.monotonic()
                missing = [n for n in expect if n not in snap]
                if expect and not missing and now - stable_since >= settle_s:
                    break
                if now >= deadline:
                    break
                time.sleep(min(0.1, max(0.0, deadline - now)))
                new = collect_snapshot(node, exclude, include_hidden_nodes)
                if new != snap:
                    snap, stable_since = new, time.monotonic()
            return snap, time.monotonic() - t0, [n for n in expect if n not in snap]
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()


# ====================================================================== CLI
def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(p)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wait", type=float, default=3.0, help="seconds to wait for discovery (default 3)")
    ap.add_argument("--markdown", help="write Markdown with a Mermaid flowchart here ('-': stdout)")
    ap.add_argument("--json", help="write the graph as JSON here ('-': stdout)")
    ap.add_argument("--title", default="ROS 2 graph", help="heading of the Markdown file")
    ap.add_argument("--expect-node", action="append", default=[], metavar="/NS/NAME",
                    help="stop waiting once this node is seen and the graph is stable (repeatable); "
                         "exit 1 if it is not seen within --wait")
    ap.add_argument("--settle", type=float, default=1.0,
                    help="with --expect-node: seconds the graph must stay unchanged (default 1)")
    ap.add_argument("--exclude-node", action="append", default=[], metavar="/NS/NAME",
                    help="leave this node out (repeatable)")
    ap.add_argument("--all", action="store_true",
                    help="keep /rosout, /parameter_events, parameter services, hidden nodes, topics and services")
    ap.add_argument("--types", action="store_true", help="show message types in the Mermaid labels")
    args = ap.parse_args(argv)
    if not args.markdown and not args.json:
        ap.error("nothing to write: give --markdown and/or --json")
    if args.wait < 0 or args.settle < 0:
        ap.error("--wait and --settle must be >= 0")
    for n in args.expect_node + args.exclude_node:
        if not n.startswith("/"):
            ap.error(f"node names must be fully qualified (start with '/'): {n!r}")

    snap, waited, missing = discover(args.wait, args.expect_node, args.settle, args.exclude_node, args.all)
    graph = build_graph(snap, include_all=args.all)
    meta = {
        "title": args.title,
        "domain_id": int(os.environ.get("ROS_DOMAIN_ID", "0") or 0),
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "waited_s": round(waited, 3),
        "include_all": args.all,
    }
    if args.json:
        _write(args.json, json.dumps(meta | graph.to_json(), indent=2) + "\n")
    if args.markdown:
        _write(args.markdown, to_markdown(graph, args.title, meta, show_types=args.types))
    print(f"topic_graph: {len(graph.nodes)} nodes, {len(graph.topics)} topics, {len(graph.services)} services, "
          f"{len(graph.actions)} actions after {waited:.1f} s", file=sys.stderr)
    if missing:
        print(f"topic_graph: error: node(s) not seen within {args.wait:g} s: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
