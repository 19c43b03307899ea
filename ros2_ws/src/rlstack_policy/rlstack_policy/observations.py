"""Observation assembly (no rclpy): the latest accepted value of every term, checked at assembly.

:class:`ObservationAssembler` keeps the latest accepted value of every term with the time it
arrived; a message with NaN/inf (or a missing key) marks its topic invalid until the next good
message; :meth:`ObservationAssembler.assemble` refuses (returns a fault) when a topic was never
received, is invalid, or is older than ``stale_after_s``. ``tf_position`` terms keep a TF buffer
per ``tf2_msgs/msg/TFMessage`` topic; ``distance`` terms are computed at assembly from the raw
values of the terms they name, as the training env computes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rlstack_bundle import derive as derive_ops

from .plan import ObsPlan, ObsTermPlan, TFBuffer, update_tf_buffer


@dataclass
class _TopicState:
    terms: List[ObsTermPlan]
    values: Dict[int, float] = field(default_factory=dict)
    rx_time: Optional[float] = None
    invalid: Optional[str] = None         # rejection kind of the last message, None when good
    updates: int = 0
    last_msg: Any = None
    last_msg_time: Optional[float] = None
    prev_raw: Dict[int, float] = field(default_factory=dict)
    tf: Optional[TFBuffer] = None          # TF buffer of a topic with tf_position terms
    image: Any = None                      # ImagePlan of an image topic
    frames: Any = None                     # its rlstack_bundle.images.FrameStack
    error: str = ""                        # the last rejection's one-line explanation


class ObservationAssembler:
    """Latest observation values per topic, checked for staleness and NaN/inf at assembly.

    ``latched_topics``: topics that never go stale once received -- the policy's *own* command
    topics read back as observations (e.g. ``/arm/gripper``, "the gripper's last command"). A
    command is a state that holds until the next one, not a stream: nobody re-publishes it while
    the policy is on its safe action, and the policy only publishes it when it acts. Checked for
    staleness, one late first message (the node activated between two of the mission's
    publications) put the policy on its safe action, which publishes no gripper command, so the
    topic only grew older: the policy never acted again (seen in a fetch: "stale /arm/gripper
    (3517 ms old)", not lifted within 14 s).
    """

    def __init__(self, plan: ObsPlan, period_s: float, stale_after_s: float,
                 latched_topics: Optional[Any] = None) -> None:
        self.plan = plan
        self.period_s = float(period_s)
        self.stale_after_s = float(stale_after_s)
        self.latched_topics = frozenset(latched_topics or ())
        self.topics: Dict[str, _TopicState] = {}
        self.term_terms = [t for t in plan.terms if t.from_terms]   # computed at assembly
        for t in plan.terms:
            if not t.from_terms:
                self.topics.setdefault(t.topic, _TopicState([])).terms.append(t)
        for st in self.topics.values():
            if any(t.derive.kind == "tf_position" for t in st.terms):
                st.tf = {}
        self.images: Dict[str, np.ndarray] = {}      # ONNX input name -> stacked frames, set by assemble()
        for im in getattr(plan, "images", ()):
            from rlstack_bundle.images import FrameStack

            self.topics[im.topic] = _TopicState([], image=im, frames=FrameStack(im.spec, self.period_s))
        self._raw = np.zeros(plan.size, dtype=np.float64)
        self._obs = np.zeros(plan.size, dtype=np.float32)
        self._scales = np.array([t.scale for t in plan.terms], dtype=np.float64)
        self._step_marks: Dict[str, int] = {k: 0 for k in self.topics}

    def update(self, topic: str, msg: Any, now_s: float) -> Optional[str]:
        """Take one message; return the rejection kind (``non_finite``, ``missing_key``,
        ``missing_index``, ``bad_value``) or None when accepted."""
        st = self.topics[topic]
        st.updates += 1
        if st.image is not None:
            return self._update_image(st, msg, now_s)
        raw: Dict[int, float] = {}
        try:
            tf = st.tf
            if tf is not None:
                tf = dict(tf)
                update_tf_buffer(tf, msg)
            for t in st.terms:
                raw[t.index] = t.raw(msg, tf)
        except KeyError:
            st.invalid = "missing_key"
            return st.invalid
        except IndexError:
            st.invalid = "missing_index"
            return st.invalid
        except ValueError as exc:
            st.invalid = "non_finite" if "non-finite" in str(exc) else "bad_value"
            return st.invalid
        except (TypeError, AttributeError):
            st.invalid = "bad_value"
            return st.invalid
        if not all(math.isfinite(v) for v in raw.values()):
            st.invalid = "non_finite"
            return st.invalid
        if st.tf is not None:
            st.tf = tf
        restart = st.rx_time is None or now_s - st.rx_time > self.stale_after_s
        for t in st.terms:
            v = raw[t.index]
            if t.derive.kind == "finite_difference":
                prev = None if restart else st.prev_raw.get(t.index)
                st.prev_raw[t.index] = v
                v = 0.0 if prev is None else (v - prev) / self.period_s
            st.values[t.index] = v
        st.rx_time = now_s
        st.invalid = None
        st.last_msg, st.last_msg_time = msg, now_s
        return None

    def _update_image(self, st: _TopicState, msg: Any, now_s: float) -> Optional[str]:
        """A sensor_msgs/Image: decode (encoding and size checked), preprocess, stack by header stamp.
        Rejections: ``bad_image`` (wrong encoding, size or length: ``st.error`` says which),
        ``out_of_order`` (a stamp not newer than the newest stacked frame)."""
        from rlstack_bundle.images import ImageError, decode, preprocess

        spec = st.image.spec
        try:
            frame = decode(spec, str(msg.encoding), int(msg.height), int(msg.width), int(msg.step), msg.data)
            frame = preprocess(frame, spec)
        except ImageError as exc:
            st.invalid, st.error = "bad_image", str(exc)
            return st.invalid
        stamp = float(msg.header.stamp.sec) + 1e-9 * float(msg.header.stamp.nanosec)
        newest = st.frames.newest_stamp
        if st.frames.push(stamp, frame) is not None:
            st.error = (f"image on {st.image.topic} stamped {stamp:.3f} s is not newer than the newest stacked "
                        f"frame ({newest:.3f} s)")
            return "out_of_order"     # the stack keeps its frames: not a fault by itself
        st.rx_time = now_s
        st.invalid, st.error = None, ""
        st.last_msg, st.last_msg_time = msg, now_s
        return None

    def all_updated(self) -> bool:
        """Every topic delivered a message (good or rejected) since the last :meth:`mark_step`."""
        return all(st.updates > self._step_marks[k] for k, st in self.topics.items())

    def mark_step(self) -> None:
        for k, st in self.topics.items():
            self._step_marks[k] = st.updates

    def newest_rx(self) -> Optional[float]:
        times = [st.rx_time for st in self.topics.values() if st.rx_time is not None]
        return max(times) if times else None

    def fault(self, now_s: float) -> Optional[str]:
        for topic, st in self.topics.items():
            if st.rx_time is None and st.invalid is None:
                return f"waiting for {topic}"
            if st.invalid is not None:
                return f"{st.invalid} on {topic}"
            age = now_s - st.rx_time
            if age > self.stale_after_s and topic not in self.latched_topics:
                return f"stale {topic} ({age * 1e3:.0f} ms old > {self.stale_after_s * 1e3:.0f} ms)"
        return None

    def assemble(self, now_s: float) -> Tuple[Optional[np.ndarray], Optional[str]]:
        """(obs float32 (n,), None) or (None, fault text)."""
        fault = self.fault(now_s)
        if fault:
            return None, fault
        raw = self._raw
        for st in self.topics.values():
            for idx, v in st.values.items():
                raw[idx] = v
        for st in self.topics.values():
            if st.image is not None:
                stack, why = st.frames.stack()
                if stack is None:
                    return None, why
                self.images[st.image.spec.input] = stack
        for t in self.term_terms:   # distance: from the other terms' raw values, as the env computes it
            raw[t.index] = derive_ops.apply_terms(t.derive.params, self._ref(t))
        self._obs[:] = raw * self._scales
        if not np.all(np.isfinite(self._obs)):
            return None, "non_finite observation after scaling"
        return self._obs, None

    def _ref(self, t: ObsTermPlan) -> Callable[[str], float]:
        p = t.derive.params
        by_name = dict(zip(p["a"] + p["b"], t.refs[0] + t.refs[1]))
        return lambda name: float(self._raw[by_name[name]])

    def replay_into(self, other: "ObservationAssembler") -> None:
        """Feed the newest message of each topic into ``other`` (used when swapping bundles)."""
        for topic, st in self.topics.items():
            if topic in other.topics and st.last_msg is not None:
                other.update(topic, st.last_msg, st.last_msg_time)
                if st.frames is not None and other.topics[topic].frames is not None \
                        and st.frames.spec == other.topics[topic].frames.spec:
                    other.topics[topic].frames._stamps = list(st.frames._stamps)   # same preprocessing: keep the stack
                    other.topics[topic].frames._frames = list(st.frames._frames)
