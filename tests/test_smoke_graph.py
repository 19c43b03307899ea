"""The smoke graph: two nodes in two processes exchange a message and a service call."""

import math

from std_msgs.msg import UInt32

from rlstack_interfaces.msg import SemanticObject
from rlstack_interfaces.srv import QueryObjects


def start_smoke_pair(ros_processes, params_dir, **talker_params):
    smoke_map = ros_processes.start_node("rlstack_smoke", "smoke_map",
                                         params_file=params_dir / "smoke_map.yaml")
    talker = ros_processes.start_node("rlstack_smoke", "smoke_talker",
                                      params_file=params_dir / "smoke_talker.yaml", params=talker_params)
    return smoke_map, talker


def test_talker_and_map_exchange_message_and_service_call(ros_processes, ros_probe, params_dir):
    start_smoke_pair(ros_processes, params_dir, label="green cylinder", object_id=42)
    # round_trips counts answers of smoke_map's service that contained the published object:
    # each one proves the topic (talker -> map) and the service (talker <-> map) both work.
    trips = ros_probe.collect("/smoke_talker/round_trips", UInt32, count=2, timeout=20)
    assert [m.data for m in trips] == [trips[0].data, trips[0].data + 1]

    reply = ros_probe.call(QueryObjects, "/query_objects",
                           QueryObjects.Request(text="the green cylinder", max_results=3))
    assert reply.success
    assert reply.header.frame_id == "map"
    assert [(m.object.id, m.object.label, m.score) for m in reply.matches] == [(42, "green cylinder", 1.0)]
    assert (reply.matches[0].object.position.x, reply.matches[0].object.position.y) == (1.0, 2.0)
    ros_processes.assert_all_alive()


def test_query_without_match_answers_empty(ros_processes, ros_probe, params_dir):
    ros_processes.start_node("rlstack_smoke", "smoke_map", params_file=params_dir / "smoke_map.yaml")
    reply = ros_probe.call(QueryObjects, "/query_objects", QueryObjects.Request(text="purple teapot"))
    assert reply.success and list(reply.matches) == []
    assert "0 match(es) among 0 object(s)" in reply.message


def test_bad_object_is_rejected_and_node_stays_up(ros_processes, ros_probe, params_dir):
    smoke_map = ros_processes.start_node("rlstack_smoke", "smoke_map", params_file=params_dir / "smoke_map.yaml")
    pub = ros_probe.publisher("/objects", SemanticObject)
    bad = SemanticObject(id=1, label="nan cube")
    bad.position.x = math.nan
    good = SemanticObject(id=2, label="fine cube")
    pub.publish(bad)
    pub.publish(good)
    smoke_map.wait_for_output("rejected object 1: non-finite position", timeout=10)
    reply = ros_probe.call(QueryObjects, "/query_objects", QueryObjects.Request(text="cube"))
    assert [m.object.id for m in reply.matches] == [2]
    assert smoke_map.alive()


def test_parameter_out_of_range_fails_at_start_with_one_line(ros_processes, params_dir):
    talker = ros_processes.start_node("rlstack_smoke", "smoke_talker",
                                      params_file=params_dir / "smoke_talker.yaml", params={"rate_hz": -5.0})
    assert talker.wait(timeout=20) == 2
    output = talker.log_text()
    assert "rate_hz" in output and "Traceback" not in output
