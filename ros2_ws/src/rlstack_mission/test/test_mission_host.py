"""RosPorts sees the mission node only as a MissionHost; the node declares from its parameter table.

* every ``self.n.<member>`` RosPorts reads is a member of :class:`rlstack_mission.host.MissionHost`;
* a real MissionNode (in process, on a private domain, with launch/params/mission.yaml) has every
  member of it, with either grasp target source, and declares exactly the table, in its order;
  values set at run time apply from the next fetch;
* :func:`rlstack_mission.parameters.configure` refuses what the node refused before it starts.
"""

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlstack_common.param_table import Values
from rlstack_mission import parameters, ros_ports
from rlstack_mission.fetch import FetchCode, FetchParams
from rlstack_mission.host import MissionHost

PARAMS = Path(__file__).resolve().parents[4] / "launch" / "params" / "mission.yaml"


def host_members():
    return set(MissionHost.__annotations__) | {
        n for n, v in vars(MissionHost).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))}


def test_ros_ports_reads_only_host_members():
    tree = ast.parse(Path(ros_ports.__file__).read_text())
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
            and n.value.attr == "n" and isinstance(n.value.value, ast.Name) and n.value.value.id == "self"}
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == "node"}
    assert "map_frame" in used and "cmd_pub" in used   # the scan sees RosPorts' reads
    assert used <= host_members(), f"RosPorts reads node members outside MissionHost: {sorted(used - host_members())}"
    assert "mission_node" not in {getattr(n, "module", "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}


def test_every_setting_of_the_host_comes_from_a_parameter():
    table = {p.name for p in parameters.MISSION}
    assert set(parameters.SETTINGS.values()) <= table
    fetch_fields = {f.name for f in dataclasses.fields(FetchParams)}
    # every parameter is a FetchParams field or one of the node's settings, once
    assert table == (table & fetch_fields) | set(parameters.SETTINGS.values())
    assert not (table & fetch_fields) & set(parameters.SETTINGS.values())


@pytest.mark.parametrize("source", ["perception", "topic"])
def test_the_node_is_a_mission_host(ros_domain_id, source):
    import rclpy
    from rclpy.parameter import Parameter

    rclpy.init(args=["--ros-args", "--params-file", str(PARAMS), "-p", f"grasp_target_source:={source}"],
               domain_id=ros_domain_id)
    try:
        from rlstack_mission.mission_node import MissionNode

        node = MissionNode()
        try:
            assert isinstance(node, MissionHost)
            missing = sorted(m for m in host_members() if not hasattr(node, m))
            assert not missing, missing
            declared = [n for n in node._parameters if n not in ("use_sim_time", "start_type_description_service")]
            assert declared == [p.name for p in parameters.MISSION]
            assert node.grasp_source == source and (node.request_pub is None) == (source == "perception")
            assert node.rate_hz == 20.0 and node.carry_point.tolist() == [0.4, 0.0, 0.6]
            assert len(node.params_.explore_waypoints) == 7 and node.params_.look_alikes == (
                (("lego", "cube"), ("duplo", "cube"), ("cube", "thing")) if source == "perception" else ())
            # values set at run time apply from the next fetch; an invalid one ends that fetch ERROR
            node.set_parameters([Parameter("dock_speed", value=0.3), Parameter("min_match_score", value=0.5)])
            node._reconfigure()
            assert node.dock_speed == 0.3 and node.params_.min_match_score == 0.5
            node.set_parameters([Parameter("look_alikes", value=["lego"])])
            handle = SimpleNamespace(request=SimpleNamespace(query="the red cube"), aborted=[])
            handle.abort = lambda: handle.aborted.append(True)
            result = node._run_fetch(handle)
            assert result.code == int(FetchCode.ERROR) and handle.aborted
            assert result.reason.startswith("invalid parameters: look_alikes entries must read")
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown()


def values(**changes):
    v = Values({p.name: p.default for p in parameters.MISSION})
    v.update(explore_waypoints=[0.0, 0.0, 0.0, 1.0, 2.0, 3.0], **changes)
    return v


def test_configure_builds_fetch_params_and_settings():
    params, settings = parameters.configure(values(min_match_score=0.7, control_rate_hz=10.0))
    assert params.min_match_score == 0.7 and params.explore_waypoints == [(0.0, 0.0, 0.0), (1.0, 2.0, 3.0)]
    assert params.look_alikes == (("lego", "cube"), ("duplo", "cube"), ("cube", "thing"))
    assert settings["rate_hz"] == 10.0 and settings["grasp_source"] == "perception"
    assert set(settings) == set(parameters.SETTINGS)
    # a pair is kept only while the height check of its word is on
    assert parameters.configure(values(brick_max_aspect=0.0))[0].look_alikes == (("cube", "thing"),)
    assert parameters.configure(values(cube_max_aspect=0.0))[0].look_alikes == (("lego", "cube"), ("duplo", "cube"))
    assert parameters.configure(values(grasp_target_source="topic"))[0].look_alikes == ()
    assert parameters.configure(values(look_alikes=[""]))[0].look_alikes == ()


@pytest.mark.parametrize("changes, message", [
    ({"explore_waypoints": [0.0]}, "explore_waypoints must hold (x, y, yaw) triples, got 1 numbers"),
    ({"look_alikes": ["lego"]}, "look_alikes entries must read 'word=look-alike'"),
    # a word the close look cannot check would be lifted on its look-alike's answer alone
    ({"look_alikes": ["ball=thing"]}, "look_alikes ['ball=thing']: the close look checks the shape of a cube, lego"),
    ({"action_introspection": "all"}, "action_introspection must be off, metadata or contents"),
    ({"grasp_target_source": "ground_truth"}, "ground_truth_grasp_target"),
    ({"grasp_target_source": "camera"}, "must be perception or topic, got 'camera'"),
    ({"carry_point": [0.4, 0.0]}, "carry_point must be (x, y, z)"),
])
def test_configure_refuses(changes, message):
    v = values()
    v.update(changes)
    with pytest.raises(ValueError) as err:
        parameters.configure(v)
    assert message in str(err.value)
