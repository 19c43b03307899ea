"""SubscriptionLane (rlstack_common.fast_lane): subscriptions taken in a thread of their own, over
real rclpy. Messages from another node arrive without any executor spinning the owner; the owner's
remappings apply and its ``__node`` remapping does not rename the lane's (hidden) node; a callback that
raises is counted and the lane goes on; destroy stops the thread."""

import time

import pytest
import rclpy
from std_msgs.msg import Int32

from rlstack_common.fast_lane import SubscriptionLane


@pytest.fixture
def context():
    from rlstack_testing.domain import lease_domain_id

    lease = lease_domain_id()
    ctx = rclpy.Context()
    # as launch_ros starts a named node with a remapping: both are the process's global arguments
    rclpy.init(args=["--ros-args", "-r", "__node:=mission", "-r", "/counts:=/counts_remapped"], context=ctx,
               domain_id=lease.domain_id)
    yield ctx
    rclpy.shutdown(context=ctx)
    lease.release()


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_the_lane_takes_messages_in_its_own_thread(context):
    owner = rclpy.create_node("owner", context=context)
    talker = rclpy.create_node("talker", context=context, use_global_arguments=False)
    lane = SubscriptionLane(owner, "state", timeout_s=0.05)
    try:
        assert owner.get_name() == "mission" and lane.node.get_name() == "_mission_state"
        got = []

        def on_count(msg):
            if msg.data < 0:
                raise ValueError("a negative count")
            got.append(msg.data)

        sub = lane.subscribe(Int32, "/counts", on_count, 10)
        assert sub.topic_name == "/counts_remapped"
        lane.start()
        pub = talker.create_publisher(Int32, "/counts_remapped", 10)
        wait_for(lambda: pub.get_subscription_count() >= 1, 20.0, "the lane's subscription was not discovered")
        for value in (1, -1, 2, 3):   # nobody spins the owner or the talker: the lane's thread takes them
            pub.publish(Int32(data=value))
            time.sleep(0.02)
        wait_for(lambda: got == [1, 2, 3], 5.0, f"the lane took {got}")
        assert lane.errors == 1
        assert lane._thread.is_alive()
    finally:
        lane.destroy()
        assert not lane._thread.is_alive()
        talker.destroy_node()
        owner.destroy_node()
