"""DirectClient (rlstack_common.fast_lane): a service call answered on a wait set of its own, over
real rclpy across two nodes; a timed-out request's late answer is not taken for the next one's."""

import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import SetBool

from rlstack_common.background_spin import BackgroundSpin
from rlstack_common.fast_lane import DirectClient


@pytest.fixture
def server():
    from rlstack_testing.domain import lease_domain_id

    lease = lease_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=lease.domain_id)
    node = rclpy.create_node("direct_client_server", context=context)
    calls = []

    def answer(request, response):
        calls.append(request.data)
        if request.data:          # "slow": answered after the caller gave up
            time.sleep(0.5)
        response.success, response.message = True, f"answer {len(calls)}"
        return response

    node.create_service(SetBool, "/direct_test", answer)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spin = BackgroundSpin(executor)
    caller = rclpy.create_node("direct_client_caller", context=context)
    yield caller, calls
    spin.stop()
    caller.destroy_node()
    node.destroy_node()
    rclpy.shutdown(context=context)
    lease.release()


def test_calls_time_out_stop_and_skip_late_answers(server):
    caller, calls = server
    direct = DirectClient(caller, SetBool, "/direct_test")
    deadline = time.monotonic() + 20
    while not direct.service_is_ready():
        assert time.monotonic() < deadline, "the test service was not discovered"
        time.sleep(0.05)
    assert direct.call(SetBool.Request(data=False), 5.0).message == "answer 1"
    with pytest.raises(TimeoutError, match="/direct_test"):
        direct.call(SetBool.Request(data=True), 0.1)          # answered 0.5 s later
    # the next call gets its own answer, not the late one to the abandoned request
    assert direct.call(SetBool.Request(data=False), 5.0).message == "answer 3"
    with pytest.raises(InterruptedError):
        direct.call(SetBool.Request(data=True), 5.0, should_stop=lambda: True, slice_s=0.05)
    deadline = time.monotonic() + 5
    while len(calls) < 4 and time.monotonic() < deadline:   # the server takes the last request in its own time
        time.sleep(0.01)
    assert calls == [False, True, False, True]
    assert direct.node.get_name() == "direct_client_caller_calls" or direct.node.get_name().startswith(
        "direct_client_caller_calls_")
    direct.destroy()
