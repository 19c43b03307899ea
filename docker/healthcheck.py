"""Container healthcheck: the environment is sound and, where asked, the graph is up.

Always: rclpy and the rlstack packages import, and a node can join the ROS graph (same
ROS_DOMAIN_ID and middleware settings as the container's nodes, through env.sh).
With RLSTACK_HEALTH_NODES=a,b,c (the robot image sets it): each of those nodes must be seen
on the graph within RLSTACK_HEALTH_TIMEOUT_S seconds (default 10). Exit 0 healthy, 1 not,
with one line saying why.
"""
import os
import sys
import time


def main() -> int:
    try:
        import rclpy

        import rlstack_common  # noqa: F401  the workspace overlay is sourced
    except Exception as exc:  # noqa: BLE001  any import failure is the answer
        print(f"unhealthy: import failed: {exc}")
        return 1
    wanted = [n.strip().lstrip("/") for n in os.environ.get("RLSTACK_HEALTH_NODES", "").split(",") if n.strip()]
    timeout = float(os.environ.get("RLSTACK_HEALTH_TIMEOUT_S", "10"))
    rclpy.init(args=["--ros-args", "--disable-rosout-logs", "--log-level", "error"])
    try:
        node = rclpy.create_node("rlstack_healthcheck", start_parameter_services=False)
        missing = wanted
        deadline = time.monotonic() + timeout
        while missing and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.2)
            seen = {name for name, _ns in node.get_node_names_and_namespaces()}
            missing = [n for n in wanted if n not in seen]
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    if missing:
        print(f"unhealthy: not on the ROS graph after {timeout:.0f} s: {', '.join(missing)}")
        return 1
    print("healthy" + (f": {', '.join(wanted)} on the graph" if wanted else ": environment ok"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
