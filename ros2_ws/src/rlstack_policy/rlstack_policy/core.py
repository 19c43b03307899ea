"""The policy runner's pure core: no rclpy, no torch, no pickle.

This module is the core's one import point; the code lives in
:mod:`~rlstack_policy.messages` (message types, field paths), :mod:`~rlstack_policy.plan`
(descriptor -> plans, derives), :mod:`~rlstack_policy.observations` (observation assembly),
:mod:`~rlstack_policy.actions` (commands, safe action, e-stop), :mod:`~rlstack_policy.stats`
(loop statistics) and :mod:`~rlstack_policy.runner` (a loaded bundle and one control step).

It turns a bundle's IO descriptor (``io.yaml``, format ``rlstack-policy-io/1``) into

* an :class:`ObsPlan`: for every observation topic, compiled getters that read each term's
  value from a message (``field`` path, ``key``/index selection, ``derive``, ``scale``), and
* an :class:`ActPlan`: for every action topic, the terms and the field each one sets,

and runs one control step safely:

* :class:`ObservationAssembler` keeps the latest accepted value of every term with the time
  it arrived; a message with NaN/inf (or a missing key) marks its topic invalid until the
  next good message; :meth:`ObservationAssembler.assemble` refuses (returns a fault) when a
  topic was never received, is invalid, or is older than ``stale_after_s``.
* :class:`ActionShaper` maps the network output to commands exactly as training did
  (``clip(offset + scale * clip(a, -1, 1), limits)`` or ``choices[a]``), then rate-limits
  and clips again; :meth:`ActionShaper.safe` gives the safe action (zero, hold or a value).
* :class:`EStopLatch` latches the safe action until reset (and refuses a reset while the
  e-stop input is still asserted).
* :class:`LoopStats` measures achieved rate, jitter, observation-to-action latency and
  overruns for the diagnostics.

Field paths (``source.field`` / ``target.field``) are dotted attribute paths. ``name[]`` is a
sequence element chosen by ``key`` (through a sibling ``name`` sequence, as in
``sensor_msgs/JointState``, or through the ``key_indices`` map for messages without names,
such as ``geometry_msgs/PoseArray``) or by ``source.index``; ``name[3]`` is a fixed element.
A sequence as the *last* segment with a ``key`` (``position`` + ``key: slider_to_cart``) is
selected the same way.

``source.derive`` is either a machine-readable mapping ``{op: ..., params}`` (the closed set
of :mod:`rlstack_bundle.derive`: ``tf_position``, ``sum``, ``sin_kyaw``, ``cos_kyaw``,
``offset_minus``, ``distance``, ``finite_difference``; evaluated with that module's functions,
which the training envs use too) or one of the legacy texts (``finite difference ...``,
``sum of ...``, ``sin(k * yaw)``, ``cos(k * yaw)``). ``tf_position`` terms keep a TF buffer
per ``tf2_msgs/msg/TFMessage`` topic (child frame -> parent, translation, rotation; every
message updates the frames it carries) and compose the chain parent -> ... -> child.
``distance`` terms are computed at assembly from the raw values of the terms they name.
"""

from __future__ import annotations

from rlstack_bundle.terms import IO_FORMAT

from .actions import SAFE_MODES, ActionShaper, EStopLatch, fill_messages, parse_max_rate, parse_safe
from .messages import (
    INTEGER,
    NUMERIC,
    Segment,
    SpecError,
    compile_path,
    message_class,
    parse_field,
    read_path,
    ros_fields,
)
from .observations import ObservationAssembler
from .plan import (
    SUPPORTED_DERIVES,
    ActPlan,
    ActTermPlan,
    Derive,
    ObsPlan,
    ObsTermPlan,
    TFBuffer,
    compile_io,
    descriptor_topics,
    parse_derive,
    parse_key_indices,
    parse_remaps,
    update_tf_buffer,
    wiring_mismatch,
)
from .stats import LoopStats, percentile

__all__ = [
    "IO_FORMAT", "NUMERIC", "INTEGER", "SAFE_MODES", "SUPPORTED_DERIVES", "SpecError",
    "message_class", "ros_fields", "Segment", "parse_field", "compile_path", "read_path",
    "Derive", "parse_derive", "TFBuffer", "ObsTermPlan", "ObsPlan", "ActTermPlan", "ActPlan", "update_tf_buffer",
    "parse_key_indices", "parse_remaps", "compile_io", "descriptor_topics", "wiring_mismatch",
    "ObservationAssembler", "parse_safe", "parse_max_rate", "ActionShaper", "fill_messages", "EStopLatch",
    "percentile", "LoopStats",
]
