"""The perception guide's "node alone" recipe and its query client, run as the guide writes them.

docs/guides/perception-in-your-stack.md starts the semantic map without the simulator
(`sim:=false`: wall-clock time, no /clock) and asks it from a short rclpy script. Both are read
from the guide itself, so the guide cannot drift from what runs: the node must answer the client
(an empty map: no match, success) without any /clock on the domain.
"""

import re
import shlex
import sys

from conftest import REPO

GUIDE = REPO / "docs" / "guides" / "perception-in-your-stack.md"


def _blocks(text: str):
    """(language, body) of every fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)


def _command_after(marker: str, body: str) -> str:
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("#") and ln != "source env.sh"]
    assert len(lines) == 1, lines
    return lines[0]


def test_node_alone_answers_the_query_client(ros_processes, ros_probe, tmp_path):
    blocks = _blocks(GUIDE.read_text())
    marker = "# runs in: tests/test_guide_perception.py::test_node_alone_answers_the_query_client"
    shell = [b for lang, b in blocks if lang == "bash" and marker in b]
    assert len(shell) == 2, "the guide's node-alone command and client command"
    graph_cmd = _command_after(marker, shell[0])
    client_cmd = _command_after(marker, shell[1])
    assert "sim:=false" in graph_cmd
    script = [b for lang, b in blocks if lang == "python" and b.startswith("# query_map.py")]
    assert len(script) == 1
    (tmp_path / "query_map.py").write_text(script[0])

    argv = [sys.executable if a == "python" else a for a in shlex.split(graph_cmd)]
    graph = ros_processes.start(argv, name="perception_alone", cwd=REPO)
    ros_probe.wait_for_node("semantic_map", timeout=90)
    assert ros_probe.node.count_publishers("/clock") == 0, "sim:=false started something that publishes /clock"

    argv = [sys.executable if a == "python" else a for a in shlex.split(client_cmd)]
    client = ros_processes.start(argv, name="query_map", cwd=tmp_path)
    code = client.wait(timeout=120)
    out = client.log_text()
    assert code == 0, out + "\n--- graph ---\n" + graph.tail()
    assert "match(es)" in out and "(frame odom)" in out, out
    assert graph.alive(), graph.tail()
