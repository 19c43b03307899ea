"""BackgroundSpin (rlstack_common.background_spin): a process that spun an executor in a background
thread exits with its own exit code. Measured here with rclpy 9: the same program that only shut the
executor down and left the daemon thread (the old pattern of the fetch evaluator) died with SIGABRT,
"terminate called without an active exception", in 20 runs of 20."""

import os
import subprocess
import sys
import textwrap

from rlstack_testing.domain import lease_domain_id

PROGRAM = textwrap.dedent("""
    import sys
    import time

    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from rlstack_common.background_spin import BackgroundSpin

    rclpy.init(args=[], signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("background_spin_exit")
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spin = BackgroundSpin(executor)
    time.sleep(0.2)                       # the thread is waiting inside rcl
    stopped = spin.stop()
    node.destroy_node()
    rclpy.try_shutdown()
    print("stopped", stopped, "alive", spin.thread.is_alive(), flush=True)
    sys.exit(130)                          # e.g. the evaluator's "interrupted"
""")


def test_the_process_exits_with_its_own_code_after_stop():
    with lease_domain_id() as lease:
        env_domain = str(lease.domain_id)
        for _ in range(3):
            proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "ROS_DOMAIN_ID": env_domain})
            assert proc.returncode == 130, proc.stdout + proc.stderr
            assert "stopped True alive False" in proc.stdout
