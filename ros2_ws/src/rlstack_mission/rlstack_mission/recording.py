"""Record ROS 2 topics into an MCAP file that the standard tools open.

The file follows what rosbag2's MCAP storage plugin (``rosbag2_storage_mcap``) writes, so
``ros2 bag info`` / ``ros2 bag play``, Foxglove and the Python ``mcap`` / ``mcap-ros2-support``
readers all open it:

* header profile ``ros2``; every channel has message encoding ``cdr``;
* one schema per message type, named with the type's full name (``geometry_msgs/msg/PoseStamped``),
  encoding ``ros2msg``, holding the *complete* definition: the type's own ``.msg`` text, then for
  every dependency (found recursively, each once, depth first, in sorted order per level) a line of
  80 ``=``, a line ``MSG: pkg/Type`` and that type's ``.msg`` text. This is rosbag2's
  ``LocalMessageDefinitionSource`` format, built from the installed ``share/<pkg>/msg/*.msg`` files;
* channel metadata ``offered_qos_profiles`` (the publishers' QoS as rosbag2's YAML, version 9
  policy names) and ``topic_type_hash`` (``RIHS01_...``), which ``ros2 bag play`` uses to offer
  the same QoS again (a latched ``/tf_static`` is replayed latched);
* a ``rosbag2`` metadata record (key ``serialized_metadata``: the bag's YAML metadata, version 9),
  which rosbag2 also writes when it closes a file.

Messages are recorded as the serialized CDR bytes the middleware delivered (``raw=True``
subscriptions): nothing is decoded or re-encoded, so any type with a ``.msg`` file works and the
bytes in the file are exactly the bytes on the wire.

Timestamps follow rosbag2's recorder: ``log_time`` is the receive time on the recording node's
clock (ROS time: simulated time when the node has ``use_sim_time``), ``publish_time`` is the
publisher's source timestamp from the middleware (system clock), or ``log_time`` where the
middleware gives none.

The pure part (definitions, QoS YAML) has no rclpy import at module level, so it can be used and
tested without a ROS context; :class:`McapRecorder` imports rclpy when it is created.
"""

from __future__ import annotations

import importlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import yaml

#: rosbag2's delimiter before each dependency in a ``ros2msg`` definition (80 '=').
DEFINITION_SEPARATOR = "=" * 80

#: The rosbag2 metadata version written in the ``rosbag2`` metadata record (Jazzy and later).
ROSBAG2_METADATA_VERSION = 9

#: Topics that are latched by convention: recorded with transient-local durability by default, so
#: the message published before the recorder started is still recorded.
LATCHED_TOPICS = ("/tf_static", "/map")

# Built-in field types of the .msg format (rosbag2's list, plus wstring, which it lacks).
_PRIMITIVE_TYPES = frozenset({
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
    "int32", "uint32", "int64", "uint64", "string", "wstring",
})

# The field type at the start of a line (``pkg/Type`` in ``pkg/Type[] name``), as rosbag2 matches
# it: comments and constants' values never start a line, so they are never taken for types.
_FIELD_TYPE = re.compile(r"(?:^|\n)\s*([a-zA-Z0-9_/]+)(?:\[[^\]]*\])?\s+")
_ROS_NAME = r"[a-zA-Z][a-zA-Z0-9_]*"
_TYPE_NAME = re.compile(rf"^({_ROS_NAME})/(?:({_ROS_NAME})/)?({_ROS_NAME})$")

TopicSpec = Union[Mapping[str, Optional[str]], Iterable[str]]


class DefinitionNotFoundError(LookupError):
    """No ``share/<pkg>/<ns>/<Type>.msg`` for a type under any ament prefix."""


# ---------------------------------------------------------------------------- type names / files
def split_type_name(type_name: str) -> Tuple[str, str, str]:
    """``pkg/msg/Type`` or ``pkg/Type`` -> ``(pkg, "msg", "Type")``; ValueError if malformed."""
    match = _TYPE_NAME.match(type_name.strip())
    if not match:
        raise ValueError(f"not a ROS interface type name: {type_name!r} (expected 'pkg/msg/Type')")
    package, namespace, name = match.groups()
    return package, namespace or "msg", name


def full_type_name(type_name: str) -> str:
    """The canonical full name, ``pkg/msg/Type`` (what rosbag2 uses for schema names)."""
    package, namespace, name = split_type_name(type_name)
    return f"{package}/{namespace}/{name}"


def ament_prefixes() -> List[Path]:
    """The ament prefixes of ``AMENT_PREFIX_PATH``, in search order (first wins)."""
    return [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]


def _package_share(package: str) -> Path:
    """``<prefix>/share/<package>`` from the ament index.

    ament_index_python is used where it is installed (it is in the ROS wheels and every
    distribution); otherwise the prefixes are walked for the index's marker file, which is what
    ament_index_python does.
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        for prefix in ament_prefixes():
            if (prefix / "share" / "ament_index" / "resource_index" / "packages" / package).is_file():
                return prefix / "share" / package
        raise DefinitionNotFoundError(f"package {package!r} is in no ament prefix (AMENT_PREFIX_PATH)") from None
    try:
        return Path(get_package_share_directory(package))
    except PackageNotFoundError:
        raise DefinitionNotFoundError(f"package {package!r} is in no ament prefix (AMENT_PREFIX_PATH)") from None


def msg_file(type_name: str) -> Path:
    """The installed ``.msg`` file of a message type."""
    package, namespace, name = split_type_name(type_name)
    path = _package_share(package) / namespace / f"{name}.msg"
    if not path.is_file():
        raise DefinitionNotFoundError(f"no .msg definition for {type_name} (looked for {path})")
    return path


def msg_dependencies(text: str, package: str) -> List[str]:
    """The non-primitive field types named in a ``.msg`` text, sorted, as ``pkg/Type``.

    A type without a package refers to the message's own package, except ``Header``, which means
    ``std_msgs/Header`` (the ROS 1 shorthand some definitions still use).
    """
    found = set()
    for match in _FIELD_TYPE.finditer(text):
        type_name = match.group(1)
        if type_name in _PRIMITIVE_TYPES:
            continue
        if "/" not in type_name:
            type_name = "std_msgs/Header" if type_name == "Header" else f"{package}/{type_name}"
        found.add(type_name)
    # rosbag2 keeps them in a std::set<std::string>: byte-wise order, which sorted() matches.
    return sorted(found)


# The parts of an .action / .srv file (split at lines of '---') and the generated types they become.
_INTERFACE_PARTS = {"action": ("Goal", "Result", "Feedback"), "srv": ("Request", "Response")}
# rosidl's field type names (get_fields_and_field_types) -> .msg names
_ROSIDL_PRIMITIVES = {"boolean": "bool", "octet": "byte", "float": "float32", "double": "float64"}


def message_class(type_name: str) -> type:
    """The Python class of a message type, including the types an action or a service generates
    (``pkg/action/Fetch_FeedbackMessage``, ``pkg/action/Fetch_GetResult_Event``, ...), which the
    package's ``action`` / ``srv`` module does not all export by name."""
    package, namespace, name = split_type_name(type_name)
    module = importlib.import_module(f"{package}.{namespace}")
    cls = getattr(module, name, None)
    if cls is None and namespace in _INTERFACE_PARTS:
        owner = getattr(module, name.split("_", 1)[0], None)  # Fetch for Fetch_FeedbackMessage
        if owner is not None:
            cls = getattr(importlib.import_module(owner.__module__), name, None)
    if cls is None:
        raise AttributeError(f"no message class {type_name}")
    return cls


def _find_class(package: str, name: str) -> Tuple[str, type]:
    """``(namespace, class)`` of ``package/name`` (introspection names carry no namespace)."""
    for namespace in ("msg", "action", "srv"):
        try:
            return namespace, message_class(f"{package}/{namespace}/{name}")
        except (ImportError, AttributeError):
            continue
    raise DefinitionNotFoundError(f"no message type {package}/{name} in its msg, action or srv module")


def _rosidl_to_msg(field_type: str) -> str:
    """``sequence<float>`` -> ``float32[]``, ``sequence<pkg/T, 1>`` -> ``pkg/T[<=1]``, ``double`` -> ``float64``."""
    match = re.fullmatch(r"sequence<(.+?)(?:,\s*(\d+))?>", field_type)
    if match:
        inner, bound = match.groups()
        return _rosidl_to_msg(inner) + (f"[<={bound}]" if bound else "[]")
    match = re.fullmatch(r"(.+?)(\[\d+\])", field_type)
    if match:
        return _rosidl_to_msg(match.group(1)) + match.group(2)
    return _ROSIDL_PRIMITIVES.get(field_type, field_type)


def _part_of_interface_file(package: str, namespace: str, name: str) -> Optional[str]:
    """``Fetch_Feedback`` -> the feedback part of ``share/pkg/action/Fetch.action`` (comments and
    constants kept), as rosbag2 gives it; None when ``name`` is not such a part."""
    base, _, part = name.rpartition("_")
    parts = _INTERFACE_PARTS.get(namespace, ())
    if not base or part not in parts:
        return None
    path = _package_share(package) / namespace / f"{base}.{namespace}"
    if not path.is_file():
        return None
    sections = re.split(r"^---\s*$\n?", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return sections[parts.index(part)] if len(sections) == len(parts) else None


def _type_text(type_name: str) -> str:
    """The ``.msg``-syntax text of one type: its installed ``.msg`` file; for the types an action
    or service generates, the part of its ``.action``/``.srv`` file, or else (wrappers such as
    ``Fetch_FeedbackMessage`` or ``Fetch_GetResult_Event``, which have no file) the fields the
    generated class reports."""
    package, namespace, name = split_type_name(type_name)
    if namespace == "msg":
        try:
            return msg_file(type_name).read_text(encoding="utf-8")
        except DefinitionNotFoundError:
            if "/msg/" in type_name:
                raise
            namespace, _ = _find_class(package, name)  # 'pkg/Fetch_Feedback' names no namespace
    text = _part_of_interface_file(package, namespace, name)
    if text is not None:
        return text
    try:
        cls = message_class(f"{package}/{namespace}/{name}")
    except (ImportError, AttributeError) as exc:
        raise DefinitionNotFoundError(f"no definition for {type_name}: {exc}") from None
    return "".join(f"{_rosidl_to_msg(t)} {field}\n" for field, t in cls.get_fields_and_field_types().items())


_DEFINITION_CACHE: Dict[str, str] = {}
_DEFINITION_LOCK = threading.Lock()


def message_definition(type_name: str) -> str:
    """The complete ``ros2msg`` definition of a message type, exactly as rosbag2 builds it.

    The type's own ``.msg`` text comes first; each dependency follows once, depth first, as
    ``"\\n" + 80*'=' + "\\nMSG: pkg/Type\\n" + text``. Action and service types (feedback
    messages, service events) work too (:func:`_type_text`). Raises
    :class:`DefinitionNotFoundError` when a definition is not installed.
    """
    key = full_type_name(type_name)
    with _DEFINITION_LOCK:
        cached = _DEFINITION_CACHE.get(key)
    if cached is not None:
        return cached
    seen: set = set()

    def expand(name: str, depth: int) -> str:
        if depth <= 0:  # message types cannot nest infinitely; this catches a broken install
            raise RecursionError(f"definition of {type_name} nests too deep (at {name})")
        package = split_type_name(name)[0]
        text = _type_text(name)
        out = text
        for dependency in msg_dependencies(text, package):
            if dependency in seen:
                continue
            seen.add(dependency)
            out += f"\n{DEFINITION_SEPARATOR}\nMSG: {dependency}\n" + expand(dependency, depth - 1)
        return out

    definition = expand(type_name if "/" in type_name.split("/", 1)[1] else key, 50)
    with _DEFINITION_LOCK:
        _DEFINITION_CACHE[key] = definition
    return definition


# ---------------------------------------------------------------------------- QoS as rosbag2 YAML
def _policy_name(policy: Any) -> str:
    # rclpy's policy enums are named like rmw's strings: KEEP_LAST -> "keep_last", UNKNOWN -> "unknown".
    return str(getattr(policy, "name", policy)).lower()


def _rmw_time(duration: Any) -> Dict[str, int]:
    nanoseconds = int(getattr(duration, "nanoseconds", duration))
    return {"sec": nanoseconds // 1_000_000_000, "nsec": nanoseconds % 1_000_000_000}


def qos_to_rosbag2(profile: Any) -> Dict[str, Any]:
    """One rclpy ``QoSProfile`` as a rosbag2 (metadata version 9) QoS mapping."""
    return {
        "history": _policy_name(profile.history),
        "depth": int(profile.depth),
        "reliability": _policy_name(profile.reliability),
        "durability": _policy_name(profile.durability),
        "deadline": _rmw_time(profile.deadline),
        "lifespan": _rmw_time(profile.lifespan),
        "liveliness": _policy_name(profile.liveliness),
        "liveliness_lease_duration": _rmw_time(profile.liveliness_lease_duration),
        "avoid_ros_namespace_conventions": bool(profile.avoid_ros_namespace_conventions),
    }


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def normalize_topic(topic: str) -> str:
    """Topic names are recorded fully qualified; a relative name is taken from the root namespace."""
    topic = topic.strip()
    return topic if topic.startswith("/") else "/" + topic


# ---------------------------------------------------------------------------- the recorder
@dataclass
class _Topic:
    name: str
    type_name: Optional[str] = None          # canonical pkg/msg/Type once known
    qos: Any = None                          # explicit QoSProfile, or None: adapt to the publishers
    subscription: Any = None
    subscribed: bool = False                 # a subscription was made (stays true after stop)
    channel_id: Optional[int] = None
    offered_qos: List[Dict[str, Any]] = field(default_factory=list)
    type_hash: str = ""
    count: int = 0
    error: Optional[str] = None


class McapRecorder:
    """Record topics from ``node`` into the MCAP file ``path``.

    ``topics`` maps topic names to message types (``pkg/msg/Type``); a type of ``None``, or a plain
    list of names, means "take the type from the ROS graph". Topics whose type or publishers are
    not known yet are retried on a timer of the node until they appear, so the recorder can be
    started before the rest of the graph.

    QoS: a topic in ``qos`` is subscribed with that profile as soon as its type is known.
    ``/tf_static`` and ``/map`` default to reliable + transient local (depth 10), so their latched
    message is recorded even when it was published before the recorder started. Every other topic
    is subscribed once a publisher is visible, with rosbag2's adaptation to the offers: reliable if
    every publisher is reliable (else best effort), transient local if every publisher is (else
    volatile). Like rosbag2, a later publisher whose QoS is incompatible with that choice is not
    recorded.

    The node must be spun by its owner (an executor, or rlstack_testing's probe); the callbacks
    take a lock, so a multi-threaded executor is fine. The file is written to a hidden temporary
    file next to ``path`` and renamed into place by :meth:`stop`, so ``path`` is either absent or
    a complete file. As a context manager it starts on entry and stops on exit, also when the
    block raised (the recording of a failure is worth keeping); :meth:`abort` discards instead.

    With ``use_sim_time`` the log times are simulated time, 0 until the first ``/clock`` arrives
    (rosbag2 behaves the same): start the recorder after the clock runs.
    """

    def __init__(
        self,
        node: Any,
        path: Union[str, os.PathLike],
        topics: TopicSpec,
        qos: Optional[Mapping[str, Any]] = None,
        *,
        compression: str = "zstd",
        chunk_size: int = 1024 * 1024,
        depth: int = 100,
        retry_period: float = 0.25,
    ) -> None:
        """
        :param node: an rclpy node; the subscriptions and the retry timer are created on it.
        :param path: the ``.mcap`` file to write (its directory is created).
        :param topics: ``{topic: type or None}`` or an iterable of topic names.
        :param qos: per-topic ``QoSProfile`` overrides (on top of the latched defaults); a value
            of ``None`` drops the default for that topic, which then adapts to its publishers.
        :param compression: chunk compression, ``"zstd"`` (default), ``"lz4"`` or ``"none"``; all three
            are read by rosbag2, Foxglove and the Python reader.
        :param chunk_size: bytes per chunk before it is compressed and written.
        :param depth: history depth of the adapted subscriptions (messages buffered while a
            callback is busy writing).
        :param retry_period: seconds between graph look-ups for topics not subscribed yet.
        """
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

        self.node = node
        self.path = Path(path)
        self.depth = int(depth)
        self.retry_period = float(retry_period)
        self._compression = compression.lower()
        self._chunk_size = int(chunk_size)
        if self._compression not in ("zstd", "lz4", "none"):
            raise ValueError(f"compression must be 'zstd', 'lz4' or 'none', got {compression!r}")

        latched = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        overrides: Dict[str, Any] = {t: latched for t in LATCHED_TOPICS}
        overrides.update({normalize_topic(t): q for t, q in (qos or {}).items()})

        items = topics.items() if isinstance(topics, Mapping) else ((t, None) for t in topics)
        self._topics: Dict[str, _Topic] = {}
        for name, type_name in items:
            name = normalize_topic(name)
            self._topics[name] = _Topic(name=name, type_name=full_type_name(type_name) if type_name else None,
                                        qos=overrides.get(name))
        if not self._topics:
            raise ValueError("no topics to record")

        self._lock = threading.RLock()
        self._writer: Any = None
        self._stream: Optional[IO[bytes]] = None
        self._tmp_path: Optional[Path] = None
        self._schemas: Dict[str, int] = {}
        self._timer: Any = None
        self._first_log_time: Optional[int] = None
        self._last_log_time: Optional[int] = None
        self._state = "new"

    # ------------------------------------------------------------------ life cycle
    def start(self) -> "McapRecorder":
        """Open the temporary file, subscribe to every topic that can be subscribed now, and
        start retrying the others. Returns self."""
        from mcap.writer import CompressionType, Writer

        with self._lock:
            if self._state != "new":
                raise RuntimeError(f"recorder already {self._state}")
            directory = self.path.resolve().parent
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; the finished file gets the usual mode
            self._tmp_path = Path(tmp)
            self._stream = os.fdopen(fd, "wb")
            compression = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4,
                           "none": CompressionType.NONE}[self._compression]
            self._writer = Writer(self._stream, chunk_size=self._chunk_size, compression=compression)
            from mcap import __version__ as mcap_version

            self._writer.start(profile="ros2", library=f"rlstack_mission.recording; mcap-python/{mcap_version}")
            self._state = "recording"
        self._resolve()
        with self._lock:
            if self._state == "recording" and self.pending:
                self._timer = self.node.create_timer(self.retry_period, self._resolve)
        return self

    def stop(self) -> Path:
        """Unsubscribe, finish the file (summary, statistics, ``rosbag2`` metadata) and rename it
        into place. Safe to call twice. Returns the final path."""
        with self._lock:
            if self._state == "stopped":
                return self.path
            if self._state != "recording":
                raise RuntimeError(f"cannot stop a recorder that is {self._state}")
            self._state = "stopping"
            if self._timer is not None:
                self.node.destroy_timer(self._timer)
                self._timer = None
            for topic in self._topics.values():
                if topic.subscription is not None:
                    self.node.destroy_subscription(topic.subscription)
                    topic.subscription = None
                # Subscribed topics without messages still get their channel, so `ros2 bag info`
                # lists them with a count of 0 (as rosbag2 does).
                if topic.subscribed and topic.channel_id is None:
                    self._ensure_channel(topic)
            try:
                self._writer.add_metadata("rosbag2", {"serialized_metadata": _yaml(self._bag_metadata())})
                self._writer.finish()
                self._stream.flush()
                os.fsync(self._stream.fileno())
                self._stream.close()
                os.replace(self._tmp_path, self.path)
            except BaseException:
                if self._tmp_path is not None and self._tmp_path.exists():
                    self._tmp_path.unlink()
                self._state = "failed"
                raise
            self._state = "stopped"
            return self.path

    def abort(self) -> None:
        """Stop without producing a file (the temporary file is removed)."""
        with self._lock:
            if self._state != "recording":
                return
            self._state = "aborted"
            if self._timer is not None:
                self.node.destroy_timer(self._timer)
                self._timer = None
            for topic in self._topics.values():
                if topic.subscription is not None:
                    self.node.destroy_subscription(topic.subscription)
                    topic.subscription = None
            try:
                self._stream.close()
            finally:
                if self._tmp_path is not None and self._tmp_path.exists():
                    self._tmp_path.unlink()

    def __enter__(self) -> "McapRecorder":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        # Finished even when the block failed: the recording of a failure is the one to look at.
        self.stop()

    # ------------------------------------------------------------------ state for callers
    @property
    def counts(self) -> Dict[str, int]:
        """Messages recorded per topic so far."""
        with self._lock:
            return {name: t.count for name, t in self._topics.items()}

    @property
    def pending(self) -> List[str]:
        """Topics not subscribed yet (type or publishers not seen yet), excluding failed ones."""
        with self._lock:
            return [n for n, t in self._topics.items() if not t.subscribed and t.error is None]

    @property
    def subscribed(self) -> List[str]:
        with self._lock:
            return [n for n, t in self._topics.items() if t.subscription is not None]

    @property
    def errors(self) -> Dict[str, str]:
        """Topics that cannot be recorded, with the reason (e.g. no .msg definition installed)."""
        with self._lock:
            return {n: t.error for n, t in self._topics.items() if t.error}

    @property
    def types(self) -> Dict[str, Optional[str]]:
        with self._lock:
            return {n: t.type_name for n, t in self._topics.items()}

    # ------------------------------------------------------------------ internals
    def _resolve(self) -> None:
        """Subscribe to every pending topic whose type (and, without a QoS override, publisher)
        is known now. Runs at start and then on the retry timer until nothing is pending."""
        with self._lock:
            if self._state != "recording":
                return
            waiting = [t for t in self._topics.values() if not t.subscribed and t.error is None]
            if not waiting:
                self._cancel_timer()
                return
            graph: Optional[Dict[str, List[str]]] = None
            for topic in waiting:
                if topic.type_name is None:
                    if graph is None:
                        graph = dict(self.node.get_topic_names_and_types())
                    types = graph.get(topic.name)
                    if not types:
                        continue
                    if len(types) > 1:
                        self.node.get_logger().warning(
                            f"recording {topic.name}: several types on the graph {types}; using {types[0]}")
                    topic.type_name = full_type_name(types[0])
                qos = topic.qos
                if qos is None:
                    publishers = self.node.get_publishers_info_by_topic(topic.name)
                    if not publishers:
                        continue
                    qos = self._adapted_qos(topic.name, publishers)
                self._subscribe(topic, qos)
            if not self.pending:
                self._cancel_timer()

    def _cancel_timer(self) -> None:
        # Only cancelled here (this runs inside the timer's own callback); stop() destroys it.
        if self._timer is not None:
            self._timer.cancel()

    def _adapted_qos(self, name: str, publishers: Sequence[Any]) -> Any:
        """rosbag2's ``adapt_request_to_offers``: a request every current publisher can serve."""
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

        offers = [p.qos_profile for p in publishers]
        reliable = all(q.reliability == ReliabilityPolicy.RELIABLE for q in offers)
        latched = all(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in offers)
        if not reliable and any(q.reliability == ReliabilityPolicy.RELIABLE for q in offers):
            self.node.get_logger().warning(
                f"recording {name}: publishers mix reliable and best effort; subscribing best effort")
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=self.depth,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )

    def _subscribe(self, topic: _Topic, qos: Any) -> None:
        try:
            message_definition(topic.type_name)  # fail here, not in the first callback
            msg_class = message_class(topic.type_name)
        except (DefinitionNotFoundError, ImportError, AttributeError, ValueError) as exc:
            topic.error = f"{topic.type_name}: {exc}"
            self.node.get_logger().error(f"not recording {topic.name}: {topic.error}")
            return

        def callback(data: bytes, info: Any, _topic: _Topic = topic) -> None:
            self._on_message(_topic, data, info)

        topic.subscription = self.node.create_subscription(msg_class, topic.name, callback, qos, raw=True)
        topic.subscribed = True

    def _ensure_channel(self, topic: _Topic) -> int:
        if topic.channel_id is not None:
            return topic.channel_id
        from mcap.well_known import MessageEncoding, SchemaEncoding

        schema_id = self._schemas.get(topic.type_name)
        if schema_id is None:
            schema_id = self._writer.register_schema(
                name=topic.type_name, encoding=SchemaEncoding.ROS2,
                data=message_definition(topic.type_name).encode("utf-8"))
            self._schemas[topic.type_name] = schema_id
        # The publishers now (one of them sent the first message) are what rosbag2 records as
        # the offered QoS; `ros2 bag play` offers the same again.
        try:
            publishers = self.node.get_publishers_info_by_topic(topic.name)
        except Exception:  # noqa: BLE001 - a graph query failure must not lose the recording
            publishers = []
        topic.offered_qos = [qos_to_rosbag2(p.qos_profile) for p in publishers]
        hashes = [str(p.topic_type_hash) for p in publishers if getattr(p, "topic_type_hash", None) is not None]
        topic.type_hash = next((h for h in hashes if h.startswith("RIHS")), "")
        topic.channel_id = self._writer.register_channel(
            topic=topic.name, message_encoding=MessageEncoding.CDR, schema_id=schema_id,
            metadata={"offered_qos_profiles": _yaml(topic.offered_qos) if topic.offered_qos else "",
                      "topic_type_hash": topic.type_hash})
        return topic.channel_id

    def _on_message(self, topic: _Topic, data: bytes, info: Any) -> None:
        log_time = self.node.get_clock().now().nanoseconds
        source = info.get("source_timestamp", 0) if isinstance(info, Mapping) else 0
        with self._lock:
            if self._state != "recording":
                return
            channel_id = self._ensure_channel(topic)
            self._writer.add_message(channel_id=channel_id, log_time=log_time,
                                     publish_time=source if source and source > 0 else log_time,
                                     sequence=topic.count & 0xFFFFFFFF, data=bytes(data))
            topic.count += 1
            if self._first_log_time is None or log_time < self._first_log_time:
                self._first_log_time = log_time
            if self._last_log_time is None or log_time > self._last_log_time:
                self._last_log_time = log_time

    def _bag_metadata(self) -> Dict[str, Any]:
        """The bag metadata rosbag2 stores in the ``rosbag2`` metadata record (version 9)."""
        start = self._first_log_time or 0
        duration = (self._last_log_time - start) if self._last_log_time is not None else 0
        total = sum(t.count for t in self._topics.values())
        topics = [
            {"topic_metadata": {"name": t.name, "type": t.type_name, "serialization_format": "cdr",
                                "offered_qos_profiles": t.offered_qos, "type_description_hash": t.type_hash},
             "message_count": t.count}
            for t in self._topics.values() if t.channel_id is not None
        ]
        return {
            "version": ROSBAG2_METADATA_VERSION,
            "storage_identifier": "mcap",
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": total,
            "topics_with_message_count": topics,
            "compression_format": "",
            "compression_mode": "",
            "relative_file_paths": [self.path.name],
            "files": [{"path": self.path.name, "starting_time": {"nanoseconds_since_epoch": start},
                       "duration": {"nanoseconds": duration}, "message_count": total}],
            "custom_data": {"recorder": "rlstack_mission.recording"},
            "ros_distro": os.environ.get("ROS_DISTRO", ""),
        }
