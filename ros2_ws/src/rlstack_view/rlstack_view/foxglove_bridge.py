"""The graph's topics on the Foxglove WebSocket protocol (foxglove-sdk), no rclpy here.

ROS messages go out as they arrive, in their CDR bytes (message encoding ``cdr``) with their
``ros2msg`` schema, so Foxglove and Lichtblick decode and draw them as ROS messages (3D panel:
/tf, /map, /plan, markers, the robot model; Image panel: the camera). The camera goes out as a
``sensor_msgs/msg/CompressedImage`` (PNG, downscaled and rate-limited by the node). The server
offers no client publishing, services or parameters: a Foxglove client can watch, not command.
Latched topics (/map, /tf_static, /robot_description, ...) are sent again to each new subscriber.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set

BUILTINS = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
            "uint32", "int64", "uint64", "string", "wstring"}


def _field_types(text: str, package: str) -> List[str]:
    """The message types a .msg definition refers to, as ``pkg/Type``."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        ftype = line.split()[0]
        base = re.sub(r"(\[.*\])$", "", ftype)
        base = re.sub(r"<=\d+$", "", base)
        if base in BUILTINS:
            continue
        if "/" not in base:
            base = f"{package}/{base}"
        out.append(base.replace("/msg/", "/"))
    return out


def ros2msg_schema(type_name: str, find_msg: Callable[[str, str], Path]) -> str:
    """The full ``ros2msg`` schema text of ``type_name`` ("pkg/msg/Type"): its definition, then each
    type it uses (depth first) after a line of '=' and ``MSG: pkg/Type``, as rosbag2 writes MCAP."""
    pkg, _, name = type_name.partition("/msg/")
    root = find_msg(pkg, name).read_text()
    parts = [root.rstrip()]
    seen: Set[str] = set()
    stack = list(reversed(_field_types(root, pkg)))
    while stack:
        dep = stack.pop()
        if dep in seen:
            continue
        seen.add(dep)
        dpkg, dname = dep.split("/")
        text = find_msg(dpkg, dname).read_text()
        parts.append("=" * 80 + f"\nMSG: {dpkg}/{dname}\n" + text.rstrip())
        stack.extend(reversed(_field_types(text, dpkg)))
    return "\n".join(parts) + "\n"


class FoxgloveBridge:
    """One Foxglove WebSocket server and one channel per topic."""

    def __init__(self, host: str, port: int, find_msg: Callable[[str, str], Path], name: str = "rlstack") -> None:
        import foxglove  # foxglove-sdk: the full (workstation) install has it

        self._fg = foxglove
        self._find_msg = find_msg
        self.channels: Dict[str, object] = {}
        self.latched: Dict[str, bytes] = {}
        self._resend: Set[str] = set()
        self._lock = threading.Lock()
        bridge = self

        self._subscribers: Dict[str, Set[int]] = {}

        class Listener(foxglove.ServerListener):
            def on_subscribe(self, client, channel) -> None:
                with bridge._lock:
                    bridge._subscribers.setdefault(channel.topic, set()).add(client.id)
                    if channel.topic in bridge.latched:
                        bridge._resend.add(channel.topic)

            def on_unsubscribe(self, client, channel) -> None:
                with bridge._lock:
                    bridge._subscribers.get(channel.topic, set()).discard(client.id)

        self.server = foxglove.start_server(name=name, host=host, port=port, server_listener=Listener(),
                                            capabilities=[])

    @property
    def port(self) -> int:
        return self.server.port

    def watched_topics(self) -> Set[str]:
        """The topics some Foxglove client subscribes to now."""
        with self._lock:
            return {t for t, ids in self._subscribers.items() if ids}

    def add_ros_topic(self, topic: str, type_name: str, latched: bool = False) -> None:
        schema = self._fg.Schema(name=type_name, encoding="ros2msg",
                                 data=ros2msg_schema(type_name, self._find_msg).encode())
        self.channels[topic] = self._fg.Channel(topic, schema=schema, message_encoding="cdr")
        if latched:
            self.latched.setdefault(topic, b"")

    def log(self, topic: str, cdr: bytes, stamp_ns: Optional[int] = None) -> None:
        ch = self.channels.get(topic)
        if ch is None:
            return
        if topic in self.latched:
            with self._lock:
                self.latched[topic] = cdr
        ch.log(cdr, log_time=stamp_ns)

    def resend_latched(self) -> None:
        """Send the last message of each latched topic that a client subscribed to since the last call."""
        with self._lock:
            topics, self._resend = self._resend, set()
            msgs = {t: self.latched.get(t, b"") for t in topics}
        for topic, cdr in msgs.items():
            if cdr:
                self.channels[topic].log(cdr)

    def stop(self) -> None:
        self.server.stop()
