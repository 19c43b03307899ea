"""declare_parameter: descriptors reach the node, and ranges are enforced by rclpy itself."""

import os

import pytest
import rclpy
from rclpy.exceptions import InvalidParameterValueException
from rclpy.parameter import Parameter

from rlstack_common import declare_parameter


@pytest.fixture
def make_node():
    """Nodes in a private context (no global rclpy state), with optional overrides."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=0)
    nodes = []

    def factory(**overrides):
        node = rclpy.create_node(
            "params_test", context=context, start_parameter_services=False,
            parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        nodes.append(node)
        return node

    yield factory
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


def test_descriptor_carries_description_and_float_range(make_node):
    node = make_node()
    value = declare_parameter(node, "rate_hz", 10.0, "Publish rate, Hz", min_value=0.1, max_value=100.0)
    assert value == 10.0
    [descriptor] = node.describe_parameters(["rate_hz"])
    assert descriptor.description == "Publish rate, Hz"
    assert (descriptor.floating_point_range[0].from_value, descriptor.floating_point_range[0].to_value) == (0.1, 100.0)


def test_integer_range_and_constraints_text(make_node):
    node = make_node()
    declare_parameter(node, "count", 3, "How many", min_value=1, max_value=10, constraints="small")
    [descriptor] = node.describe_parameters(["count"])
    assert (descriptor.integer_range[0].from_value, descriptor.integer_range[0].to_value) == (1, 10)
    assert descriptor.additional_constraints == "small"


def test_override_inside_range_is_taken(make_node):
    node = make_node(rate_hz=50.0)
    assert declare_parameter(node, "rate_hz", 10.0, "rate", min_value=0.1, max_value=100.0) == 50.0


def test_override_outside_range_is_refused_at_declaration(make_node):
    node = make_node(rate_hz=-5.0)
    with pytest.raises(InvalidParameterValueException):
        declare_parameter(node, "rate_hz", 10.0, "rate", min_value=0.1, max_value=100.0)


def test_range_needs_both_bounds_and_a_number(make_node):
    node = make_node()
    with pytest.raises(ValueError, match="both min_value and max_value"):
        declare_parameter(node, "a", 1.0, "a", min_value=0.0)
    with pytest.raises(ValueError, match="int or float default"):
        declare_parameter(node, "b", "text", "b", min_value=0, max_value=1)
    with pytest.raises(ValueError, match="int or float default"):
        declare_parameter(node, "c", True, "c", min_value=0, max_value=1)


def test_small_message_profile_replaces_only_the_project_default(tmp_path, monkeypatch):
    from rlstack_common import use_small_message_profile

    (tmp_path / "fastdds_shm_only.xml").write_text("<dds/>")
    (tmp_path / "fastdds_shm_small.xml").write_text("<dds/>")
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", str(tmp_path / "fastdds_shm_only.xml"))
    use_small_message_profile()
    assert os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] == str(tmp_path / "fastdds_shm_small.xml")

    users_own = tmp_path / "my_profile.xml"
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", str(users_own))
    use_small_message_profile()
    assert os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] == str(users_own)


def test_nodes_spin_on_the_wait_set_executor_unless_asked(monkeypatch):
    """The EventsExecutor lost subscription and service events for good under CPU overload
    (node_main's docstring): nodes default to the wait-set SingleThreadedExecutor."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor

    from rlstack_common.node_main import make_executor

    rclpy.init()
    try:
        monkeypatch.delenv("RLSTACK_EXECUTOR", raising=False)
        assert type(make_executor()) is SingleThreadedExecutor
        monkeypatch.setenv("RLSTACK_EXECUTOR", "events")
        assert type(make_executor()).__name__ == EventsExecutor.__name__ == "EventsExecutor"
        monkeypatch.setenv("RLSTACK_EXECUTOR", "fast")
        with pytest.raises(ValueError, match="single.*events"):
            make_executor()
    finally:
        rclpy.shutdown()
