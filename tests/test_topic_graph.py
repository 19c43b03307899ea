"""tools/topic_graph.py against a live graph: the smoke graph through the runner, plus an action
server on the test's probe node so that the folding of `/_action/` endpoints is seen live."""

import json
import re
import sys

from conftest import REPO

from rlstack_interfaces.action import NavigateTo

TOOL = REPO / "tools" / "topic_graph.py"
SMOKE = REPO / "launch" / "smoke.launch.yaml"
MAP, TALKER = "/smoke/smoke_map", "/smoke/smoke_talker"

sys.path.insert(0, str(REPO / "tools"))
import topic_graph  # noqa: E402  (the pure parts, for the folding test without ROS)


def _mermaid_ids(markdown: str):
    """(label -> Mermaid id, the Mermaid block), ids from lines such as `n0["/smoke/smoke_map"]`."""
    block = markdown.split("```mermaid", 1)[1].split("```", 1)[0]
    return {label: ident for ident, label in re.findall(r'^\s*(\w+)[\[({]+"([^"<]+)', block, re.M)}, block


def test_topic_graph_of_the_smoke_graph(ros_processes, ros_probe, tmp_path):
    from rclpy.action import ActionServer

    runner = ros_processes.start_graph(SMOKE)
    # An action server on the probe's node: it shows up as hidden services and topics.
    server = ActionServer(ros_probe.node, NavigateTo, "probe_navigate", execute_callback=lambda goal: None)
    try:
        # Wait for discovery from the probe's side (graph counts, no sleeps).
        ros_probe.wait_for_node("smoke_map", "/smoke", timeout=30)
        ros_probe.wait_for_node("smoke_talker", "/smoke", timeout=30)
        ros_probe.wait_for_publishers("/smoke/objects", timeout=30)
        ros_probe.wait_for_subscribers("/smoke/objects", timeout=30)
        ros_probe.spin_until(
            lambda: "/smoke/query_objects" in dict(ros_probe.node.get_service_names_and_types()),
            timeout=30, what="service /smoke/query_objects")

        md, js = tmp_path / "graph.md", tmp_path / "graph.json"
        # The tool discovers on its own: it returns once the named nodes are seen and the graph
        # stayed unchanged for --settle s (at most --wait s).
        tool = ros_processes.start(
            [sys.executable, str(TOOL), "--wait", "30", "--settle", "1.0", "--title", "Smoke graph",
             "--expect-node", MAP, "--expect-node", TALKER, "--expect-node", "/test_probe",
             "--markdown", str(md), "--json", str(js)],
            name="topic_graph", cwd=REPO)
        assert tool.wait(timeout=60) == 0, tool.tail()
        assert runner.alive(), runner.tail()
    finally:
        server.destroy()

    data = json.loads(js.read_text())
    assert data["domain_id"] == ros_processes.domain_id
    nodes = {n["name"]: n for n in data["nodes"]}
    assert {MAP, TALKER, "/test_probe"} <= set(nodes)
    assert not any(n.startswith("/topic_graph_") for n in nodes), "the tool listed its own node"

    topics = {t["name"]: t for t in data["topics"]}
    assert topics["/smoke/objects"]["types"] == ["rlstack_interfaces/msg/SemanticObject"]
    assert topics["/smoke/objects"]["publishers"] == [TALKER]
    assert topics["/smoke/objects"]["subscribers"] == [MAP]
    assert topics["/smoke/smoke_talker/round_trips"]["publishers"] == [TALKER]
    assert not {"/rosout", "/parameter_events"} & set(topics)
    assert not any("/_" in t for t in topics), "hidden topics are left out by default"

    services = {s["name"]: s for s in data["services"]}
    assert services["/smoke/query_objects"] == {
        "name": "/smoke/query_objects", "types": ["rlstack_interfaces/srv/QueryObjects"],
        "clients": [TALKER], "servers": [MAP]}
    assert not any(s.endswith("/get_parameters") for s in services), "parameter services are left out"
    assert not any("/_action/" in s for s in services)

    actions = {a["name"]: a for a in data["actions"]}
    assert actions["/probe_navigate"]["types"] == ["rlstack_interfaces/action/NavigateTo"]
    assert actions["/probe_navigate"]["servers"] == ["/test_probe"]
    assert nodes["/test_probe"]["action_servers"] == ["/probe_navigate"]
    assert nodes[MAP]["service_servers"] == ["/smoke/query_objects"]
    assert nodes[TALKER]["service_clients"] == ["/smoke/query_objects"]

    text = md.read_text()
    assert text.startswith("# Smoke graph\n")
    ids, block = _mermaid_ids(text)
    assert block.lstrip().startswith("flowchart ")
    n_map, n_talker = ids[MAP], ids[TALKER]
    t_objects, s_query = ids["/smoke/objects"], ids["/smoke/query_objects"]
    a_nav = ids["/probe_navigate (action)"]
    assert re.search(rf"^\s*{n_map}\[", block, re.M), "nodes are boxes"
    assert re.search(rf'^\s*{t_objects}\("', block, re.M), "topics are rounded"
    for edge in (f"{n_talker} --> {t_objects}", f"{t_objects} --> {n_map}",        # pub -> topic -> sub
                 f"{n_talker} -.-> {s_query}", f"{s_query} -.-> {n_map}",          # client -.-> srv -.-> server
                 f"{a_nav} -.-> {ids['/test_probe']}"):                            # action -.-> server
        assert re.search(rf"^\s*{re.escape(edge)}$", block, re.M), f"missing edge {edge}:\n{block}"
    assert "/rosout" not in block and "/_action/" not in block
    assert "| `/smoke/smoke_talker` |" in text


def test_missing_expected_node_fails(ros_processes):
    tool = ros_processes.start(
        [sys.executable, str(TOOL), "--wait", "1", "--expect-node", "/no/such_node", "--json", "-"],
        name="topic_graph", cwd=REPO)
    assert tool.wait(timeout=30) == 1
    assert "not seen within 1 s: /no/such_node" in tool.log_text()


def test_action_endpoints_fold_into_one_action():
    """Server and client sides of an action, as rclpy reports them, become one action edge."""
    goal_t, cancel_t = "pkg/action/Fetch_SendGoal", "action_msgs/srv/CancelGoal"
    snap = {
        "/mission": {
            "publishers": [("/fetch/_action/feedback", ["pkg/action/Fetch_FeedbackMessage"]),
                           ("/fetch/_action/status", ["action_msgs/msg/GoalStatusArray"]),
                           ("/rosout", ["rcl_interfaces/msg/Log"])],
            "subscribers": [("/navigate_to/_action/feedback", ["pkg/action/NavigateTo_FeedbackMessage"])],
            "servers": [("/fetch/_action/send_goal", [goal_t]), ("/fetch/_action/cancel_goal", [cancel_t]),
                        ("/mission/get_parameters", ["rcl_interfaces/srv/GetParameters"])],
            "clients": [("/navigate_to/_action/send_goal", ["pkg/action/NavigateTo_SendGoal"]),
                        ("/navigate_to/_action/get_result", ["pkg/action/NavigateTo_GetResult"]),
                        ("/policy_node/change_state", ["lifecycle_msgs/srv/ChangeState"])],
        },
        "/nav_controller": {
            "servers": [("/navigate_to/_action/send_goal", ["pkg/action/NavigateTo_SendGoal"])],
        },
    }
    g = topic_graph.build_graph(snap)
    assert set(g.actions) == {"/fetch", "/navigate_to"}
    assert g.actions["/navigate_to"].types == ["pkg/action/NavigateTo"]
    assert (g.actions["/navigate_to"].sources, g.actions["/navigate_to"].sinks) == (["/mission"], ["/nav_controller"])
    assert g.actions["/fetch"].sinks == ["/mission"] and g.actions["/fetch"].sources == []
    assert set(g.services) == {"/policy_node/change_state"}   # lifecycle services stay; parameters go
    assert g.topics == {}                                       # /_action/ topics folded, /rosout dropped
    mermaid = topic_graph.to_mermaid(g)
    assert mermaid.count("(action)") == 2 and "/_action/" not in mermaid
    everything = topic_graph.build_graph(snap, include_all=True)
    assert "/rosout" in everything.topics and "/fetch/_action/send_goal" in everything.services


def test_the_reference_page_is_the_tools_output_of_the_fetch_graph():
    """docs/reference/topic-graph.md is the tool's Markdown of the fetch graph: its header, a Mermaid
    block whose node boxes are the fetch graph's nodes, and one table section per node."""
    page = REPO / "docs" / "reference" / "topic-graph.md"
    text = page.read_text()
    assert "Generated by `tools/topic_graph.py`" in text
    _, block = _mermaid_ids(text)
    nodes = set(re.findall(r'^\s*\w+\["(/[^"<]+)"\]', block, re.M))        # node boxes: id["/name"]
    others = set(re.findall(r'^\s*\w+[({]+"([^"<]+)"', block, re.M))      # topics, services, actions
    assert {"/sim_bridge", "/semantic_map", "/nav_controller", "/policy_node", "/mission"} <= nodes, sorted(nodes)
    for name in ("/fetch (action)", "/navigate_to (action)", "/semantic_map/query", "/cmd_vel"):
        assert name in others, f"{name} missing from the page's graph"
