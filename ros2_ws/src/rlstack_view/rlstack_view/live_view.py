"""live_view: watch and command the robot from a browser or from Foxglove / Lichtblick.

A thin node over the pure cores (core, server, foxglove_bridge). It serves, on 127.0.0.1 by
default, the built-in page (http://HOST:PORT/) and the Foxglove WebSocket protocol
(ws://127.0.0.1:FOXGLOVE_PORT). The page sends only Fetch goals and cancels. Reference:
docs/reference/live-view.md.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Dict, List, Optional

from nav_msgs.msg import OccupancyGrid, Path as PathMsg
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from rlstack_common.node_main import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import LATCHED, TF_STATIC
from rlstack_interfaces.msg import SemanticMap

from .core import (MapFrame, downscale, encode_png, image_to_rgb, occupancy_to_grey,
                   parse_tf_cdr, place_labels, yaw_of, TfTree2D)
from .parameters import LIVE_VIEW, check_values
from .server import ViewServer

SENSOR = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
TF_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
#: the overhead map is drawn at most this many pixels on its longer side
MAP_PX = 640


def find_msg(package: str, name: str) -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory(package)) / "msg" / f"{name}.msg"


class LiveView(Node):
    def __init__(self) -> None:
        super().__init__("live_view")
        self.params = v = declare_all(self, LIVE_VIEW)
        self.host, self.port, self.fox_host, self.fox_port = v.host, v.port, v.foxglove_host, v.foxglove_port
        self.camera_topic, self.map_frame, self.dropoff, self.fetch_action = (v.camera_topic, v.map_frame, v.dropoff,
                                                                             v.fetch_action)
        self.token = v.token or os.environ.get("LIVE_VIEW_TOKEN", "")
        check_values(v, self.token)

        self.lock = threading.Lock()
        self.tf = TfTree2D()
        self.map_msg: Optional[Dict[str, Any]] = None
        self.map_frame_px: Optional[MapFrame] = None
        self.map_version = 0
        self.plan: List[List[float]] = []
        self.objects: List[Dict[str, Any]] = []
        self.mission: Dict[str, Any] = {}
        self.camera_raw: Optional[bytes] = None
        self.camera_seq = 0
        self.camera_sent_seq = 0
        self.bad_input: Dict[str, int] = {}
        self.fetch: Dict[str, Any] = {"state": "idle"}
        self.goal_handle = None
        self.pending: deque = deque()

        try:
            self.server = ViewServer(self.host, self.port, self.token, self.on_command,
                                     max_message_bytes=v.max_message_bytes, max_query_chars=v.max_query_chars)
        except OSError as exc:
            raise ValueError(f"cannot serve the page on {self.host}:{self.port}: {exc}") from None
        self.bridge = None
        if v.foxglove:
            try:
                from .foxglove_bridge import FoxgloveBridge
                self.bridge = FoxgloveBridge(self.fox_host, self.fox_port, find_msg)
            except ImportError:
                self.get_logger().warning("foxglove-sdk is not installed: the Foxglove server is off "
                                          "(pip install foxglove-sdk; the full install has it)")
            except Exception as exc:   # noqa: BLE001 -- the SDK's own error type: a port in use, ...
                self.server.stop()
                raise ValueError(f"cannot start the Foxglove server on {self.fox_host}:{self.fox_port}: {exc}") \
                    from None
        topics = [("/map", "nav_msgs/msg/OccupancyGrid", LATCHED, self.on_map),
                  ("/plan", "nav_msgs/msg/Path", LATCHED, self.on_plan),
                  ("/tf", "tf2_msgs/msg/TFMessage", TF_QOS, self.on_tf),
                  ("/tf_static", "tf2_msgs/msg/TFMessage", TF_STATIC, self.on_tf),
                  ("/robot_description", "std_msgs/msg/String", LATCHED, None),
                  ("/semantic_map/markers", "visualization_msgs/msg/MarkerArray", SENSOR, None),
                  ("/semantic_map", "rlstack_interfaces/msg/SemanticMap", SENSOR, self.on_semantic_map),
                  ("/mission/status", "std_msgs/msg/String", LATCHED, self.on_mission_status)]
        msg_types = {"nav_msgs/msg/OccupancyGrid": OccupancyGrid, "nav_msgs/msg/Path": PathMsg,
                     "tf2_msgs/msg/TFMessage": TFMessage, "std_msgs/msg/String": String,
                     "rlstack_interfaces/msg/SemanticMap": SemanticMap}
        from visualization_msgs.msg import MarkerArray
        msg_types["visualization_msgs/msg/MarkerArray"] = MarkerArray
        # Latched, low-rate topics stay subscribed; the busy ones (/tf, the camera, the semantic map)
        # only while someone watches them: a page is open, or a Foxglove client subscribes.
        self.lazy: Dict[str, tuple] = {}
        self.subs: Dict[str, Any] = {}
        self.unwatched_since: Dict[str, float] = {}
        for topic, type_name, qos, handler in topics:
            latched = qos is LATCHED or qos is TF_STATIC
            if self.bridge is not None and type_name != "rlstack_interfaces/msg/SemanticMap":
                self.bridge.add_ros_topic(topic, type_name, latched=latched)
            spec = (msg_types[type_name], self._raw_callback(topic, msg_types[type_name], handler), qos)
            if latched:
                self.subs[topic] = self.create_subscription(spec[0], topic, spec[1], qos, raw=True)
            else:
                self.lazy[topic] = spec
        self.lazy[self.camera_topic] = (Image, self.on_camera, SENSOR)
        self.fox_camera = self.camera_topic.rstrip("/") + "/compressed"
        if self.bridge is not None:
            self.bridge.add_ros_topic(self.fox_camera, "sensor_msgs/msg/CompressedImage")
        self.create_timer(0.25, self.update_subscriptions)

        from rlstack_mission.send_fetch import fetch_action_client
        self.client = fetch_action_client(self, self.fetch_action)
        self.create_timer(1.0 / v.camera_rate_hz, self.send_camera)
        self.create_timer(1.0 / v.state_rate_hz, self.send_state)
        self.create_timer(0.1, self.run_commands)
        self.server.start()
        url = f"http://{self.host}:{self.server.port}/" + (f"?token={self.token}" if self.token else "")
        fox = f"ws://{self.fox_host}:{self.bridge.port}" if self.bridge is not None else "off"
        self.get_logger().info(f"live view: {url}  (Foxglove / Lichtblick: {fox})")
        print(f"live view: {url}", flush=True)

    def watched(self) -> set:
        """The lazily subscribed topics someone watches now."""
        wanted = set(self.lazy) if self.server.client_count() else set()
        if self.bridge is not None:
            fox = self.bridge.watched_topics()
            wanted |= {t for t in self.lazy if t in fox}
            if self.fox_camera in fox:
                wanted.add(self.camera_topic)
        return wanted

    def update_subscriptions(self) -> None:
        wanted, now = self.watched(), time.monotonic()
        for topic, (cls, callback, qos) in self.lazy.items():
            if topic in wanted:
                self.unwatched_since.pop(topic, None)
                if topic not in self.subs:
                    self.subs[topic] = self.create_subscription(cls, topic, callback, qos, raw=True)
            elif topic in self.subs and now - self.unwatched_since.setdefault(topic, now) > 10.0:
                self.destroy_subscription(self.subs.pop(topic))   # nobody watched it for 10 s
                self.unwatched_since.pop(topic, None)

    # ------------------------------------------------------------------ inputs
    def _bad(self, kind: str, text: str) -> None:
        with self.lock:
            n = self.bad_input[kind] = self.bad_input.get(kind, 0) + 1
        if n == 1:
            self.get_logger().warning(f"{kind}: {text} (counted; logged once)")

    def _raw_callback(self, topic: str, cls, handler):
        def callback(raw: bytes) -> None:
            if self.bridge is not None and topic in self.bridge.channels:
                self.bridge.log(topic, raw, time.time_ns())
            if handler is not None:
                try:
                    handler(raw if cls is TFMessage else deserialize_message(raw, cls))
                except (ValueError, TypeError, IndexError) as exc:
                    self._bad(f"bad {topic}", str(exc))
        return callback

    def on_map(self, msg: OccupancyGrid) -> None:
        info = msg.info
        grey = occupancy_to_grey(msg.data, info.width, info.height)
        if not (math.isfinite(info.resolution) and info.resolution > 0):
            raise ValueError(f"map resolution {info.resolution}")
        scale = MAP_PX / max(info.width, info.height)
        frame = MapFrame(info.origin.position.x, info.origin.position.y, info.resolution, info.width, info.height,
                         scale)
        png = base64.b64encode(encode_png(grey, level=6)).decode()
        with self.lock:
            self.map_frame_px = frame
            self.map_version += 1
            self.map_msg = {"png": png, "w": info.width, "h": info.height, "scale": scale,
                            "version": self.map_version}

    def on_plan(self, msg: PathMsg) -> None:
        pts = [[p.pose.position.x, p.pose.position.y] for p in msg.poses]
        if len(pts) > 400:
            pts = pts[::math.ceil(len(pts) / 400)] + [pts[-1]]
        with self.lock:
            self.plan = pts

    def on_tf(self, raw: bytes) -> None:
        try:
            transforms = parse_tf_cdr(raw)
        except ValueError:   # not plain CDR: the message classes read it
            msg = deserialize_message(raw, TFMessage)
            transforms = [(t.header.frame_id, t.child_frame_id, t.transform.translation.x, t.transform.translation.y,
                           t.transform.translation.z, t.transform.rotation.x, t.transform.rotation.y,
                           t.transform.rotation.z, t.transform.rotation.w) for t in msg.transforms]
        with self.lock:
            for parent, child, x, y, _z, qx, qy, qz, qw in transforms:
                self.tf.set(parent, child, x, y, yaw_of(qx, qy, qz, qw))

    def on_semantic_map(self, msg: SemanticMap) -> None:
        objs = [{"label": (o.label or f"object {o.id}")[:40], "x": o.position.x, "y": o.position.y,
                 "confidence": round(float(o.confidence), 2)} for o in msg.objects[:100]
                if math.isfinite(o.position.x) and math.isfinite(o.position.y)]
        with self.lock:
            self.objects = objs

    def on_mission_status(self, msg: String) -> None:
        status = json.loads(msg.data)
        if not isinstance(status, dict):
            raise ValueError("/mission/status is not a JSON object")
        with self.lock:
            self.mission = {k: status[k] for k in ("phase", "detail", "query", "missions", "succeeded", "last_result")
                            if k in status}

    def on_camera(self, raw: bytes) -> None:
        with self.lock:   # keep the bytes only: decoding waits for the view's own rate
            self.camera_raw = raw
            self.camera_seq += 1

    # ------------------------------------------------------------------ outputs
    def send_camera(self) -> None:
        with self.lock:
            raw, seq = self.camera_raw, self.camera_seq
        if raw is None or seq == self.camera_sent_seq:
            return
        if self.camera_topic not in self.watched():
            return
        self.camera_sent_seq = seq
        try:
            img = deserialize_message(raw, Image)
            rgb = downscale(image_to_rgb(img.encoding, img.height, img.width, img.step, bytes(img.data)),
                            self.params.camera_width)
        except ValueError as exc:
            self._bad("bad camera image", str(exc))
            return
        png = encode_png(rgb)
        if self.server.client_count():
            self.server.broadcast({"type": "camera", "png": base64.b64encode(png).decode(),
                                   "w": int(rgb.shape[1]), "h": int(rgb.shape[0])})
        if self.bridge is not None:
            out = CompressedImage(header=img.header, format="png", data=png)
            self.bridge.log(self.fox_camera, serialize_message(out), time.time_ns())

    def state(self, with_map: bool) -> Dict[str, Any]:
        with self.lock:
            frame = self.map_frame_px
            pose = self.tf.lookup(self.map_frame, self.params.base_frame)
            out: Dict[str, Any] = {"type": "state", "plan": list(self.plan), "mission": dict(self.mission),
                                   "fetch": json.loads(json.dumps(self.fetch)), "bad_input": dict(self.bad_input),
                                   "map_version": self.map_version}
            objects = list(self.objects)
            if with_map and self.map_msg is not None:
                out["map"] = dict(self.map_msg)
        out["robot"] = None if pose is None else {"x": pose[0], "y": pose[1], "yaw": pose[2]}
        out["server"] = self.server.stats()
        if frame is not None:
            out["frame"] = {"ox": frame.origin_x, "oy": frame.origin_y, "res": frame.resolution,
                            "w": frame.width, "h": frame.height, "scale": frame.scale}
            anchors = [frame.to_px(o["x"], o["y"]) for o in objects]
            robot = [] if pose is None else [frame.to_px(pose[0], pose[1])]
            labels = place_labels(anchors, [o["label"] for o in objects], frame.size_px,
                                  keep_clear=[(u - 13, v - 13, u + 13, v + 13) for u, v in robot])
            for o, a, lab in zip(objects, anchors, labels):
                o["px"], o["lbl"] = [round(a[0], 1), round(a[1], 1)], None if lab is None else [round(lab[0], 1),
                                                                                                round(lab[1], 1)]
        out["objects"] = objects
        return out

    def send_state(self) -> None:
        if self.bridge is not None:
            self.bridge.resend_latched()
        if self.server.client_count() == 0:
            self._sent_map_version = -1
            return
        # the map goes with the state whenever it changed, and every 5 s for pages that just connected
        now = time.monotonic()
        with_map = (getattr(self, "_sent_map_version", -1) != self.map_version
                    or now - getattr(self, "_map_sent_at", 0.0) > 5.0)
        state = self.state(with_map)
        if "map" in state:
            self._sent_map_version, self._map_sent_at = self.map_version, now
        self.server.broadcast(state)

    # ------------------------------------------------------------------ commands (page -> mission)
    def on_command(self, op: str, query: Optional[str]) -> Dict[str, Any]:
        """Called from a server thread; the goal itself is sent from the node's executor."""
        with self.lock:
            state = self.fetch.get("state")
            if op == "fetch":
                if state in ("sending", "active", "canceling"):
                    return {"type": "refused", "reason": "a fetch is running: stop it first"}
                self.fetch = {"state": "sending", "query": query, "feedback": [], "result": None,
                              "started": time.time()}
            elif state not in ("sending", "active"):
                return {"type": "refused", "reason": "no fetch is running"}
            self.pending.append((op, query))
        return {"type": "ack", "op": op}

    def run_commands(self) -> None:
        while True:
            with self.lock:
                if not self.pending:
                    return
                op, query = self.pending.popleft()
            if op == "fetch":
                self._send_goal(query)
            else:
                self._cancel()

    def _finish(self, code: int, code_name: str, reason: str, durations: Optional[Dict] = None) -> None:
        with self.lock:
            started = self.fetch.get("started", time.time())
            self.fetch.update(state="done", result={"code": code, "code_name": code_name, "reason": reason,
                                                    "phase_durations": durations or {},
                                                    "wall_s": round(time.time() - started, 1)})
            self.goal_handle = None

    def _send_goal(self, query: str) -> None:
        from rlstack_interfaces.action import Fetch
        from rlstack_mission.send_fetch import FETCH_CODES

        if not self.client.server_is_ready():
            self._finish(-1, "NO_MISSION", f"no mission answers {self.fetch_action}")
            return
        x, y, yaw = self.dropoff
        goal = Fetch.Goal(query=query)
        goal.dropoff.header.frame_id = self.map_frame
        goal.dropoff.pose.position.x, goal.dropoff.pose.position.y = float(x), float(y)
        goal.dropoff.pose.orientation.z, goal.dropoff.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)

        def on_feedback(m) -> None:
            with self.lock:
                fb = self.fetch.setdefault("feedback", [])
                fb.append({"phase": m.feedback.phase, "detail": m.feedback.detail[:200]})
                del fb[:-20]

        def on_result(fut) -> None:
            try:
                r = fut.result().result
            except Exception as exc:  # noqa: BLE001 -- told on the page
                self._finish(-1, "ERROR", f"no result: {exc}")
                return
            self._finish(int(r.code), FETCH_CODES.get(int(r.code), str(r.code)), r.reason,
                         {n: round(float(d), 2) for n, d in zip(r.phase_names, r.phase_durations)})

        def on_goal(fut) -> None:
            handle = fut.result()
            if not handle.accepted:
                self._finish(5, "REJECTED", "the mission rejected the goal (a fetch is running?)")
                return
            cancel_now = False
            with self.lock:
                self.goal_handle = handle
                if self.fetch.get("state") == "canceling":
                    cancel_now = True
                else:
                    self.fetch["state"] = "active"
            handle.get_result_async().add_done_callback(on_result)
            if cancel_now:
                handle.cancel_goal_async()

        self.get_logger().info(f"fetch from the page: {query!r}")
        self.client.send_goal_async(goal, feedback_callback=on_feedback).add_done_callback(on_goal)

    def _cancel(self) -> None:
        with self.lock:
            handle = self.goal_handle
            self.fetch["state"] = "canceling"
        self.get_logger().info("stop from the page: canceling the fetch")
        if handle is not None:
            handle.cancel_goal_async()

    def destroy_node(self) -> None:
        try:
            self.server.stop()
            if self.bridge is not None:
                self.bridge.stop()
        finally:
            super().destroy_node()


def main(args: Optional[List[str]] = None) -> int:
    return run_node(LiveView, args)


if __name__ == "__main__":
    sys.exit(main())
