"""cmd_vel_mux: one publisher on the base's command topic, several velocity sources behind it.

Subscribes: one geometry_msgs/Twist topic per input (``input_topics``), and ``lock_topic``
(std_msgs/Bool) when set. Publishes: ``output_topic`` (geometry_msgs/Twist, default /cmd_vel),
/diagnostics (the winning input, per-input forwarded/masked/rejected counts).

The highest-priority input whose last command is at most its timeout old wins and its commands
are forwarded as they arrive; when none wins any more, one zero command is sent (``stop_on_idle``)
and the mux stays silent. Semantics and the lock: ``rlstack_adapters.mux`` (the pure core).
Timeouts run on the steady (wall) clock, also under use_sim_time: they ask whether a source is
still talking, and the sources publish on wall-clock loops (the mission) or per /odom message;
a paused or faster-than-real-time simulation neither freezes nor shortens them.
In the fetch and robot graphs the navigation controller publishes on /cmd_vel_nav, the mission's
docking moves on /cmd_vel_mission, and this node alone publishes /cmd_vel.
"""

from __future__ import annotations

import sys
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist, Vector3
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from std_msgs.msg import Bool

from rlstack_adapters.mux import MuxLock, VelocityMux, build_inputs
from rlstack_adapters.parameters import CMD_VEL_MUX
from rlstack_common import run_node
from rlstack_common.param_table import declare_all


class CmdVelMux(Node):
    def __init__(self) -> None:
        super().__init__("cmd_vel_mux")
        v = declare_all(self, CMD_VEL_MUX)
        self.stop_on_idle = v.stop_on_idle
        out_topic, rate, diag_period = v.output_topic, v.check_rate_hz, v.diagnostics_period_s
        lock_topic, lock_prio, lock_timeout = v.lock_topic, v.lock_priority, v.lock_timeout_s
        names, topics, prios, timeouts = v.input_names, v.input_topics, v.input_priorities, v.input_timeouts

        inputs = build_inputs(names, topics, prios, timeouts)
        lock = MuxLock(lock_topic, int(lock_prio), float(lock_timeout)) if lock_topic else None
        self.core = VelocityMux(inputs, lock=lock, stop_on_idle=bool(self.stop_on_idle))
        self.pub = self.create_publisher(Twist, out_topic, 10)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        for inp in inputs:
            self.create_subscription(Twist, inp.topic, lambda m, n=inp.name: self.on_input(n, m), 10)
        if lock is not None:
            self.create_subscription(Bool, lock.topic, self.on_lock, 10)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0 / rate, lambda: self.send(self.core.tick(self.now())), clock=steady)
        self.create_timer(diag_period, self.publish_diagnostics, clock=steady)
        desc = ", ".join(f"{i.name} {i.topic} (priority {i.priority}, timeout {i.timeout_s:g} s)" for i in inputs)
        self.get_logger().info(f"-> {out_topic}: {desc}" + (f"; lock {lock.topic} (priority {lock.priority})"
                                                            if lock else ""))

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def on_input(self, name: str, msg: Twist) -> None:
        lin = (msg.linear.x, msg.linear.y, msg.linear.z)
        ang = (msg.angular.x, msg.angular.y, msg.angular.z)
        before = self.core.counts()[name]["rejected"]
        self.send(self.core.offer(name, lin, ang, self.now()))
        if self.core.counts()[name]["rejected"] != before:
            self.get_logger().warning(f"input '{name}': dropped a non-finite command", throttle_duration_sec=5.0)

    def on_lock(self, msg: Bool) -> None:
        self.send(self.core.set_lock(msg.data, self.now()))

    def send(self, cmd) -> None:
        if cmd is not None:
            (lx, ly, lz), (ax, ay, az) = cmd
            self.pub.publish(Twist(linear=Vector3(x=lx, y=ly, z=lz), angular=Vector3(x=ax, y=ay, z=az)))

    def publish_diagnostics(self) -> None:
        now = self.now()
        active = self.core.active(now)
        st = DiagnosticStatus(name=f"{self.get_name()}: velocity mux", hardware_id="cmd_vel")
        st.level = DiagnosticStatus.OK
        st.message = f"active: {active}" if active else ("locked" if self.core.locked(now) else "idle")
        values = [KeyValue(key="active", value=active or ""), KeyValue(key="locked", value=str(self.core.locked(now))),
                  KeyValue(key="idle_stops", value=str(self.core.idle_stops))]
        for name, c in self.core.counts().items():
            values += [KeyValue(key=f"{name}.{k}", value=str(v)) for k, v in c.items()]
        st.values = values
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(msg)


def main(args=None) -> int:
    return run_node(CmdVelMux, args, small_messages=True)


if __name__ == "__main__":
    sys.exit(main())
