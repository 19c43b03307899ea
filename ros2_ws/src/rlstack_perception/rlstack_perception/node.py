"""semantic_map: the perception pipeline as a ROS 2 node (thin adapter; no algorithm here).

Subscribes: ``rgb_topic`` (rgb8/bgr8), ``depth_topic`` (32FC1 m or 16UC1 mm), ``camera_info_topic``,
``/tf`` + ``/tf_static`` (camera pose composed by a pure :class:`TfBuffer`).
Publishes:  ``semantic_map`` (rlstack_interfaces/SemanticMap), ``semantic_map/markers``
(visualization_msgs/MarkerArray with text labels), ``/diagnostics``.
Services:   ``~/query`` (QueryObjects: text in, ranked objects out), ``~/forget`` (QueryObjects:
forgets the objects the text matches, max_results of them, and returns them), ``~/clear``,
``~/save``, ``~/load`` (std_srvs/Trigger; file from ``map_file``).
Bad input (size mismatch, missing camera_info, no valid depth, unknown frame, bad encoding)
skips the frame, is counted on /diagnostics and logged once per kind every 5 s.
"""

from __future__ import annotations

import sys
import time
from collections import Counter, OrderedDict

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

from rlstack_common import run_node
from rlstack_common.param_table import declare_all
from rlstack_common.qos import TF_STATIC, sensor_subscription
from rlstack_interfaces.msg import ObjectMatch, SemanticMap, SemanticObject
from rlstack_interfaces.srv import QueryObjects
from rlstack_perception.frame import Frame, FrameError
from rlstack_perception.parameters import SEMANTIC_MAP, make_embedder, make_segmenter
from rlstack_perception.segment import FilterConfig
from rlstack_perception.semantic_map import CorruptMapFile, MapConfig
from rlstack_perception.tf_buffer import TfBuffer, TransformNotYet


def secs(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def to_time(t: float):
    from builtin_interfaces.msg import Time

    return Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)) % 1_000_000_000)


def image_array(msg: Image, kind: str) -> np.ndarray:
    """rgb8/bgr8 -> (H,W,3) uint8; 32FC1/16UC1 -> (H,W) float32 metres. Raises FrameError."""
    enc = msg.encoding.lower()
    table = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "32fc1": (np.float32, 1), "16uc1": (np.uint16, 1)}
    if enc not in table or (kind == "rgb") != (table[enc][1] == 3):
        raise FrameError("bad_encoding", f"{kind} encoding '{msg.encoding}' not supported")
    dtype, ch = table[enc]
    itemsize = np.dtype(dtype).itemsize
    if msg.width == 0 or msg.height == 0 or msg.step < msg.width * ch * itemsize \
            or len(msg.data) < msg.step * msg.height:
        raise FrameError("size_mismatch", f"{kind} image {msg.width}x{msg.height} step {msg.step} "
                                          f"with {len(msg.data)} bytes")
    buf = np.frombuffer(bytes(msg.data), dtype=np.uint8)[: msg.step * msg.height].reshape(msg.height, msg.step)
    row = buf[:, : msg.width * ch * itemsize].copy()
    arr = row.view(np.dtype(dtype).newbyteorder(">" if msg.is_bigendian else "<"))
    arr = arr.reshape(msg.height, msg.width, ch) if ch == 3 else arr.reshape(msg.height, msg.width)
    if enc == "bgr8":
        arr = arr[..., ::-1]
    if enc == "16uc1":
        arr = np.where(arr > 0, arr.astype(np.float32) / 1000.0, np.nan)
    return np.ascontiguousarray(arr.astype(np.float32) if ch == 1 else arr)


#: no camera frame used for this long (wall time): the node says what it did receive, s
INPUT_WATCH_S = 5.0


class SemanticMapNode(Node):
    def __init__(self) -> None:
        super().__init__("semantic_map")
        v = declare_all(self, SEMANTIC_MAP)
        self.rgb_topic, self.depth_topic, self.info_topic = v.rgb_topic, v.depth_topic, v.camera_info_topic
        self.map_frame, self.rate, self.tf_wait = v.map_frame, v.update_rate_hz, v.tf_wait_s
        self.max_skew, self.map_file, self.autosave = v.max_stamp_skew_s, v.map_file, v.autosave_period_s
        self.publish_embeddings, self.marker_scale = v.publish_embeddings, v.marker_text_size
        map_cfg = MapConfig(sim_threshold=v.sim_threshold, gate_m=v.gate_m, max_objects=v.max_objects,
                            label_min_score=v.label_min_score, snap_temperature=v.snap_temperature,
                            colocated_m=v.colocated_m, merge_m=v.merge_m)
        filt = FilterConfig(min_area=v.min_area_px, max_area_fraction=v.max_area_fraction,
                            min_stability=v.min_stability, min_valid_depth=v.min_valid_depth)

        from rlstack_perception.pipeline import Pipeline

        seg, (emb, text) = make_segmenter(v), make_embedder(v)
        t0 = time.monotonic()
        head = None
        if v.query_head and v.embedder == "crop_cnn":
            from rlstack_perception.query_head import DEFAULT_QUERY_HEAD, QueryHead

            head = QueryHead(v.query_head_path or DEFAULT_QUERY_HEAD, v.colour_words, v.shape_words,
                             v.noun_words)
        from rlstack_perception.embed import ALL_LABELS

        # crop_cnn names what its card says it was trained on; CLIP (zero-shot) every label
        labels = getattr(emb, "labels", ALL_LABELS)
        self.pipeline = Pipeline(seg, emb, text, map_cfg, filt, labels=labels, max_range_m=v.max_range_m,
                                 query_head=head,
                                 match_threshold=None if v.match_threshold <= -1.0 else v.match_threshold)
        self.get_logger().info(f"pipeline {seg.name} + {emb.name} ready in {time.monotonic() - t0:.1f} s "
                               f"(query head: {'on' if head else 'off'}, match threshold "
                               f"{self.pipeline.match_threshold:g})")

        self.tf = TfBuffer(v.tf_cache_s, v.tf_max_extrapolation_s)
        self.info = None
        self.rgb_msgs: "OrderedDict[int, Image]" = OrderedDict()
        self.depth_msgs: "OrderedDict[int, Image]" = OrderedDict()
        self.last_done = -1
        self.counts = Counter()
        self.skips = Counter()
        self.last_ms = {}
        self.last_update = time.monotonic()
        self.last_processed = time.monotonic()   # when a frame was last used (wall time)
        self._silence_reported = False

        if v.load_on_start and self.map_file:
            self._load()
        self.map_pub = self.create_publisher(SemanticMap, "semantic_map", 1)
        self.marker_pub = self.create_publisher(MarkerArray, "semantic_map/markers", 1)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        sensor_subscription(self, Image, self.rgb_topic, lambda m: self._image(m, self.rgb_msgs, "rgb"))
        sensor_subscription(self, Image, self.depth_topic, lambda m: self._image(m, self.depth_msgs, "depth"))
        sensor_subscription(self, CameraInfo, self.info_topic, self._info)
        self.create_subscription(TFMessage, "/tf", lambda m: self._tf(m, False), 100)
        self.create_subscription(TFMessage, "/tf_static", lambda m: self._tf(m, True), TF_STATIC)
        self.create_service(QueryObjects, "~/query", self._query)
        self.create_service(QueryObjects, "~/forget", self._forget)
        self.create_service(Trigger, "~/clear", self._clear)
        self.create_service(Trigger, "~/save", self._save)
        self.create_service(Trigger, "~/load", self._load_srv)
        self.create_timer(1.0 / self.rate, self._update)
        self.create_timer(v.diagnostics_period_s, self._diagnostics)
        self.create_timer(INPUT_WATCH_S, self._watch_input)
        if self.autosave > 0 and self.map_file:
            self.create_timer(self.autosave, lambda: self._save(None, Trigger.Response()))
        self.get_logger().info(f"ready: {self.rgb_topic} + {self.depth_topic} -> semantic_map in "
                               f"'{self.map_frame}' at <= {self.rate:g} Hz")

    # ---------------------------------------------------------------- inputs
    def _image(self, msg: Image, store: OrderedDict, kind: str) -> None:
        self.counts[f"{kind}_received"] += 1
        store[msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec] = msg
        while len(store) > 4:
            store.popitem(last=False)

    def _info(self, msg: CameraInfo) -> None:
        self.info = msg

    def _tf(self, msg: TFMessage, static: bool) -> None:
        for t in msg.transforms:
            tr, q = t.transform.translation, t.transform.rotation
            try:
                self.tf.set_transform(t.header.frame_id, t.child_frame_id, (tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w),
                                      secs(t.header.stamp), static)
            except ValueError:
                self._skip("bad_tf", f"bad transform {t.header.frame_id} -> {t.child_frame_id}")

    def _skip(self, kind: str, message: str) -> None:
        self.skips[kind] += 1
        self.counts["frames_skipped"] += 1
        self.get_logger().warning(f"skipped frame ({kind}): {message} [{self.skips[kind]} so far]",
                               throttle_duration_sec=5.0)

    def _pair(self):
        best = None
        for ks, rgb in reversed(self.rgb_msgs.items()):
            for kd, depth in self.depth_msgs.items():
                if abs(ks - kd) <= self.max_skew * 1e9 and ks > self.last_done:
                    best = (ks, rgb, depth)
                    break
            if best:
                break
        return best

    def _update(self) -> None:
        pair = self._pair()
        if pair is None:
            return
        key, rgb_msg, depth_msg = pair
        try:
            frame = self._frame(rgb_msg, depth_msg)
        except FrameError as exc:
            if exc.kind == "tf_not_yet" and self.get_clock().now().nanoseconds - key < self.tf_wait * 1e9:
                return   # /tf has not caught up with this image yet (the localiser's map -> odom): next turn
            self.last_done = key
            self._skip("unknown_frame" if exc.kind == "tf_not_yet" else exc.kind, str(exc))
            return
        self.last_done = key
        try:
            res = self.pipeline.process(frame)
        except FrameError as exc:
            self._skip(exc.kind, str(exc))
            return
        self.counts["frames_processed"] += 1
        self.last_processed = time.monotonic()
        self.counts["detections"] += len(res.detections)
        for k, v in res.dropped.items():
            self.counts[f"dropped_{k}"] += v
        self.last_ms = res.timings_ms
        self._publish(rgb_msg.header.stamp)

    def _frame(self, rgb_msg: Image, depth_msg: Image) -> Frame:
        info = self.info
        if info is None:
            raise FrameError("missing_camera_info", f"no CameraInfo on {self.info_topic} yet")
        rgb = image_array(rgb_msg, "rgb")
        depth = image_array(depth_msg, "depth")
        if rgb.shape[:2] != depth.shape or (info.height, info.width) != depth.shape:
            raise FrameError("size_mismatch", f"rgb {rgb.shape[1]}x{rgb.shape[0]}, depth {depth.shape[1]}x"
                                              f"{depth.shape[0]}, camera_info {info.width}x{info.height}")
        if rgb_msg.header.frame_id != depth_msg.header.frame_id:
            raise FrameError("frame_mismatch", f"rgb in '{rgb_msg.header.frame_id}', depth in "
                                               f"'{depth_msg.header.frame_id}'")
        fx, cx, fy, cy = info.k[0], info.k[2], info.k[4], info.k[5]
        frame = Frame(rgb, depth, fx, fy, cx, cy, np.eye(3), np.zeros(3), secs(rgb_msg.header.stamp))
        frame.validate()  # image content first (NaN/zero depth, intrinsics), then the pose
        try:
            frame.rotation, frame.translation = self.tf.lookup(self.map_frame, rgb_msg.header.frame_id, frame.stamp)
        except TransformNotYet as exc:
            raise FrameError("tf_not_yet", str(exc)) from None
        except LookupError as exc:
            raise FrameError("unknown_frame", str(exc)) from None
        return frame

    # ---------------------------------------------------------------- outputs
    def _object_msg(self, o) -> SemanticObject:
        m = SemanticObject(id=o.id, label=o.label, confidence=o.confidence, observations=o.observations,
                           last_seen=to_time(o.last_seen))
        m.position = Point(x=float(o.position[0]), y=float(o.position[1]), z=float(o.position[2]))
        m.size.x, m.size.y, m.size.z = (float(v) for v in o.size)
        if self.publish_embeddings:
            m.embedding = [float(v) for v in o.embedding]
        return m

    def _publish(self, stamp) -> None:
        objs = self.pipeline.map.snapshot()
        msg = SemanticMap()
        msg.header.frame_id = self.map_frame
        msg.header.stamp = stamp
        msg.objects = [self._object_msg(o) for o in objs]
        self.map_pub.publish(msg)
        markers = MarkerArray()
        markers.markers.append(Marker(action=Marker.DELETEALL))
        for o in objs:
            for kind in ("shape", "text"):
                mk = Marker()
                mk.header = msg.header
                mk.ns = f"semantic_map/{kind}"
                mk.id = int(o.id)
                mk.pose.position = Point(x=float(o.position[0]), y=float(o.position[1]), z=float(o.position[2]))
                mk.pose.orientation.w = 1.0
                mk.color.a = 0.8
                mk.color.r = mk.color.g = mk.color.b = 1.0
                if kind == "shape":
                    mk.type = Marker.CUBE
                    mk.scale.x, mk.scale.y, mk.scale.z = (max(float(v), 0.01) for v in o.size)
                else:
                    mk.type = Marker.TEXT_VIEW_FACING
                    mk.pose.position.z += float(o.size[2]) / 2 + self.marker_scale
                    mk.scale.z = self.marker_scale
                    mk.text = f"{o.label or '?'} #{o.id} ({o.observations})"
                markers.markers.append(mk)
        self.marker_pub.publish(markers)

    def _diagnostics(self) -> None:
        st = DiagnosticStatus(name="semantic_map: perception", hardware_id="perception")
        skipped = self.counts["frames_skipped"]
        st.level = DiagnosticStatus.WARN if skipped and self.skips else DiagnosticStatus.OK
        st.message = f"{len(self.pipeline.map)} objects; {self.counts['frames_processed']} frames, {skipped} skipped"
        kv = {"objects": len(self.pipeline.map), "objects_merged": self.pipeline.map.merged,
              **{k: v for k, v in self.counts.items()},
              **{f"skipped_{k}": v for k, v in self.skips.items()},
              **{f"ms_{k}": round(v, 2) for k, v in self.last_ms.items()}}
        kv.setdefault("frames_processed", 0)
        kv.setdefault("frames_skipped", 0)
        st.values = [KeyValue(key=k, value=str(v)) for k, v in kv.items()]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diag_pub.publish(msg)

    # ---------------------------------------------------------------- services
    def _matches(self, request):
        return self.pipeline.query(request.text, int(request.max_results), float(request.min_score))

    def _query(self, request, response):
        response.header.frame_id = self.map_frame
        response.header.stamp = self.get_clock().now().to_msg()
        if not request.text.strip():
            response.success, response.message = False, "empty query"
            return response
        try:
            ranked = self._matches(request)
        except Exception as exc:  # noqa: BLE001 - answer, never crash
            response.success, response.message = False, f"query failed: {exc}"
            return response
        response.matches = [ObjectMatch(object=self._object_msg(o), score=float(s)) for o, s in ranked]
        response.success = True
        response.message = f"{len(ranked)} match(es) among {len(self.pipeline.map)} object(s); {self._frames_summary()}"
        return response

    def _watch_input(self) -> None:
        """No frame used for ``INPUT_WATCH_S``: say what did arrive (a dead camera topic, a lost
        transform and images that never pair read differently), once per silence."""
        idle = time.monotonic() - self.last_processed
        if idle < INPUT_WATCH_S:
            self._silence_reported = False
            return
        if self._silence_reported:
            return
        self._silence_reported = True
        c = self.counts
        self.get_logger().warning(
            f"no camera frame used for {idle:.0f} s: received {c['rgb_received']} rgb and {c['depth_received']} "
            f"depth image(s) on {self.rgb_topic} and {self.depth_topic}, camera_info "
            f"{'yes' if self.info is not None else 'none yet'}; {self._frames_summary()}")

    def _frames_summary(self) -> str:
        """How the camera input is going, for an answer that finds nothing: 'no object' reads
        differently when no frame was ever used (a dead camera topic, a missing transform)."""
        used, skipped = self.counts["frames_processed"], self.counts["frames_skipped"]
        text = f"{used} camera frame(s) used"
        if used:
            text += f", the last {time.monotonic() - self.last_processed:.1f} s ago"
        if skipped:
            text += f", {skipped} skipped (" + ", ".join(f"{k}: {n}" for k, n in self.skips.most_common()) + ")"
        return text

    def _forget(self, request, response):
        if request.max_results == 0:
            request.max_results = 1
        response = self._query(request, response)
        if response.success:
            n = self.pipeline.map.forget([m.object.id for m in response.matches])
            response.message = f"forgot {n} object(s)"
            self._publish(self.get_clock().now().to_msg())
        return response

    def _clear(self, _request, response):
        n = self.pipeline.map.clear()
        self._publish(self.get_clock().now().to_msg())
        response.success, response.message = True, f"cleared {n} object(s)"
        return response

    def _save(self, _request, response):
        if not self.map_file:
            response.success, response.message = False, "map_file is not set"
            return response
        try:
            path = self.pipeline.map.save(self.map_file, self.map_frame)
        except OSError as exc:
            response.success, response.message = False, f"save failed: {exc}"
            return response
        response.success, response.message = True, f"saved {len(self.pipeline.map)} object(s) to {path}"
        return response

    def _load(self):
        try:
            n = self.pipeline.map.load(self.map_file)
        except FileNotFoundError:
            return False, f"no map file {self.map_file}"
        except CorruptMapFile as exc:
            self.counts["corrupt_map_files"] += 1
            self.get_logger().error(str(exc))
            return False, str(exc)
        except OSError as exc:
            return False, f"load failed: {exc}"
        self.get_logger().info(f"loaded {n} object(s) from {self.map_file}")
        return True, f"loaded {n} object(s) from {self.map_file}"

    def _load_srv(self, _request, response):
        if not self.map_file:
            response.success, response.message = False, "map_file is not set"
            return response
        response.success, response.message = self._load()
        if response.success:
            self._publish(self.get_clock().now().to_msg())
        return response


def main(args: list[str] | None = None) -> int:
    return run_node(SemanticMapNode, args)


if __name__ == "__main__":
    sys.exit(main())
