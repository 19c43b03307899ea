"""The shipped controllers served over ROS against the bridge: real processes, 60 s of sim time.

Each test starts ``launch/policy_<task>.launch.yaml`` through the project's runner with the
bridge in **lockstep** and the policy node in ``message`` trigger: the test is the clock.
It calls ``/sim_bridge/step`` (one control period), waits until the policy node has
published the action computed from the state that step published, and steps again. This
is exactly the training loop (observe, act, step) with the real node, topics and bridge in
between, and 60 s of sim time take ~10 s instead of 60 s of wall time. A short realtime run
(timer and message triggers) is in tests/test_policy_realtime.py.

The lift controller is not served here yet: its bundle (policies/lift) does not exist.
"""

from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, Vector3
from std_msgs.msg import Float64

from rlstack_interfaces.srv import SimStep

SIM_SECONDS = 60.0


def policy_diag(queue):
    """Values of the newest policy_node status in the collected /diagnostics messages."""
    for msg in reversed(queue.messages):
        for st in msg.status:
            if st.name.endswith(": policy"):
                return {kv.key: kv.value for kv in st.values}
    return {}


def wait_for_the_loop(probe, actions, tries: int = 10) -> None:
    """Step until the first action comes back: bridge -> policy -> probe is connected end to end.

    Seeing each other's endpoints in the graph is not enough: a reader matches a writer a moment
    later, and in lockstep a /joint_states sample sent before the policy's reader matched is lost
    for good (nothing else is sent until the next step). A few unanswered warm-up steps cost the
    cart or plate only a few sim milliseconds of control.
    """
    for _ in range(tries):
        before = len(actions)
        reply = probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=1))
        assert reply.success, reply.message
        try:
            probe.spin_until(lambda: len(actions) > before, 1.0, "the policy's first action")
            return
        except TimeoutError:
            continue
    raise TimeoutError(f"no action from the policy after {tries} warm-up steps")


def lockstep_run(probe, actions, steps, on_step):
    """step(1) -> wait for the action of that step -> ... ``steps`` times; on_step(i, reply)."""
    wait_for_the_loop(probe, actions)
    for i in range(steps):
        before = len(actions)
        reply = probe.call(SimStep, "/sim_bridge/step", SimStep.Request(steps=1))
        assert reply.success, reply.message
        probe.spin_until(lambda: len(actions) > before, 5.0, f"the policy's action after step {i}")
        on_step(i, reply)


def test_cartpole_balances_60s_of_sim_time(ros_processes, ros_probe, repo):
    runner = ros_processes.start_graph(repo / "launch/policy_cartpole.launch.yaml", {"mode": "lockstep", "seed": 7})
    actions = ros_probe.subscribe("/cartpole/force", Float64)
    diag = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    ros_probe.wait_for_subscribers("/joint_states", timeout=30)   # the policy node is wired
    ros_probe.wait_for_publishers("/cartpole/force", timeout=30)
    worst = {"angle": 0.0, "x": 0.0}

    def check(i, reply):
        js = reply.joint_state
        angle = js.position[js.name.index("cart_to_pole")]
        x = js.position[js.name.index("slider_to_cart")]
        worst["angle"] = max(worst["angle"], abs(angle))
        worst["x"] = max(worst["x"], abs(x))
        assert abs(angle) < math.radians(12) and abs(x) < 2.4, (i, angle, x)

    steps = int(SIM_SECONDS * 60)
    lockstep_run(ros_probe, actions, steps, check)
    forces = [m.data for m in actions.messages]
    assert all(-10.0 <= f <= 10.0 for f in forces)
    assert any(abs(f) > 0.01 for f in forces)   # it actually controlled
    assert worst["angle"] < math.radians(6), worst
    ros_probe.spin_until(lambda: policy_diag(diag).get("steps", "0") != "0", 5, "policy diagnostics")
    d = policy_diag(diag)
    assert d["state"] == "active" and d["task"] == "cartpole" and d["trigger"] == "message"
    assert int(d["safe_steps"]) <= 2, d   # at most the start-up (no /clock yet) transient
    runner_alive = runner.alive()
    assert runner_alive, runner.tail()


def test_ball_plate_balances_60s_of_sim_time(ros_processes, ros_probe, repo):
    runner = ros_processes.start_graph(repo / "launch/policy_ball_plate.launch.yaml", {"mode": "lockstep", "seed": 3})
    actions = ros_probe.subscribe("/ball_plate/angles", Vector3)
    gt = ros_probe.subscribe("/sim_ground_truth/poses", PoseArray)
    diag = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    ros_probe.wait_for_subscribers("/sim_ground_truth/poses", count=2, timeout=30)  # policy node + this probe
    ros_probe.wait_for_publishers("/ball_plate/angles", timeout=30)
    worst = {"r": 0.0}

    def check(i, reply):
        if gt.messages:
            ball = gt.messages[-1].poses[0].position   # sorted by name: ball first
            r = max(abs(ball.x), abs(ball.y))
            worst["r"] = max(worst["r"], r)
            assert r < 0.15, (i, ball)
        gt.messages.clear()

    steps = int(SIM_SECONDS * 30)
    lockstep_run(ros_probe, actions, steps, check)
    cmds = [(m.x, m.y) for m in actions.messages]
    assert all(abs(a) <= 0.25 and abs(b) <= 0.25 for a, b in cmds)
    assert worst["r"] < 0.12, worst
    final = gt.messages[-1].poses[0].position if gt.messages else None
    ros_probe.spin_until(lambda: policy_diag(diag).get("steps", "0") != "0", 5, "policy diagnostics")
    d = policy_diag(diag)
    assert d["state"] == "active" and d["task"] == "ball_plate", d
    assert int(d["safe_steps"]) <= 2, d
    assert runner.alive(), runner.tail()
    del final
