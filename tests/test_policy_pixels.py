"""The pixel ball-on-plate controller served over ROS from the camera topic: real processes, lockstep.

``launch/policy_ball_plate_pixels.launch.yaml`` through the project's runner: the bridge in
lockstep renders the overhead camera every step (``camera_in_lockstep``, 30 Hz) and publishes
``/overhead_camera/image_raw`` (320x240 rgb8) and ``/joint_states``; the policy node (message
trigger) decodes, crops, resizes and stacks the frames by stamp and publishes
``/ball_plate/angles``. The test is the clock (step, wait for that step's action, step again),
as in tests/test_policy_balance.py, for 60 s of sim time. The ball's position comes from
``/sim_ground_truth/poses``, read by this test only (evaluation), never by the policy node.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray, Vector3
from test_policy_balance import lockstep_run, policy_diag

SIM_SECONDS = 60.0


def test_pixel_ball_plate_balances_60s_from_the_camera(ros_processes, ros_probe, repo):
    runner = ros_processes.start_graph(repo / "launch/policy_ball_plate_pixels.launch.yaml",
                                       {"mode": "lockstep", "seed": 3})
    actions = ros_probe.subscribe("/ball_plate/angles", Vector3)
    gt = ros_probe.subscribe("/sim_ground_truth/poses", PoseArray)
    diag = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    ros_probe.wait_for_subscribers("/overhead_camera/image_raw", timeout=30)   # the policy node is wired
    ros_probe.wait_for_subscribers("/sim_ground_truth/poses", count=1, timeout=30)  # this probe only
    ros_probe.wait_for_publishers("/ball_plate/angles", timeout=30)
    worst = {"r": 0.0, "checked": 0}

    def check(i, reply):
        if gt.messages:
            ball = gt.messages[-1].poses[0].position   # sorted by name: ball first
            r = max(abs(ball.x), abs(ball.y))
            worst["r"] = max(worst["r"], r)
            worst["checked"] += 1
            assert r < 0.15, (i, ball)
        gt.messages.clear()

    steps = int(SIM_SECONDS * 30)
    lockstep_run(ros_probe, actions, steps, check)
    assert worst["checked"] >= steps - 5, worst
    cmds = [(m.x, m.y) for m in actions.messages]
    assert all(abs(a) <= 0.25 and abs(b) <= 0.25 for a, b in cmds)
    assert any(abs(a) > 0.005 or abs(b) > 0.005 for a, b in cmds)   # it actually controlled
    assert worst["r"] < 0.13, worst
    ros_probe.spin_until(lambda: policy_diag(diag).get("steps", "0") != "0", 5, "policy diagnostics")
    d = policy_diag(diag)
    assert d["state"] == "active" and d["task"] == "ball_plate_pixels", d
    # the first steps wait for a full image stack (2 frames): those and the start-up are safe steps
    assert int(d["safe_steps"]) <= 5, d
    assert d.get("rejected_total") == "0", d
    assert runner.alive(), runner.tail()
