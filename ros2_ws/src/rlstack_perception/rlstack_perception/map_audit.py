"""Audit a semantic map against the simulator's ground truth: are its entries where objects are, named as
they are, and one per object?

For evaluators only (the fetch evaluation, ``rlstack_mission.harness``): the ground truth comes from the
simulator, and nothing on the robot's side reads it. Pure Python (no rclpy); :func:`audit_map_message`
takes a ``rlstack_interfaces/SemanticMap`` message (or anything shaped like one).

Rules (docs/reference/perception.md, "Auditing a map"):

* **Objects**: the ground-truth names of the form ``<colour>_<kind>`` with a colour of the map's
  vocabulary (:data:`rlstack_perception.embed.COLOURS`) and a kind of it (:data:`~rlstack_perception.embed.KINDS`),
  e.g. ``red_cube``, ``yellow_duck``. Other names (furniture, walls) are no objects; an entry on them
  is a phantom. An object with a non-finite position is left out.
* **Matched**: an entry's object is the nearest one in x/y within ``radius`` (default 0.15 m) whose
  centre is within ``height_tol`` (default 0.15 m) of the entry's in z. Of objects at the same
  distance, the current place comes before a start place, then names in alphabetical order.
* **Start places** (``start``, optional): the objects' positions when the map was started. An object that
  has moved since (by more than ``radius`` in x/y or ``height_tol`` in z: the fetched one) has its start
  place too; an entry matched there is **stale** (counted as matched, its label judged as any other).
* **Label**: correct when the label's colour word and kind word are the object's. The map's labels are
  ``"<colour> <kind>"`` with the canonical words (:data:`~rlstack_perception.embed.ALL_LABELS`); of
  other words, only the kind synonyms the label-level reports treat as the same label
  (:data:`rlstack_perception.wordings.UNSEEN_SHAPE_WORDS`: "block" = cube, "sphere" = ball) count as
  the kind. An unnamed entry (label ``""``, below ``label_min_score``) is never correct.
* **Duplicates**: extra entries on one object at one place (its current place, or its start place).
* **Phantoms**: entries matched to no object, including entries with a non-finite position (counted
  in ``non_finite`` too; they are not rejected, so one bad entry does not void the audit).
* **Missed**: objects with no entry at their current place.
"""

from __future__ import annotations

import collections
import math
import statistics
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from rlstack_perception.embed import COLOURS, KINDS
from rlstack_perception.wordings import UNSEEN_SHAPE_WORDS

__all__ = ["AuditResult", "KIND_WORDS", "audit", "audit_map_message", "map_audit_line", "map_audit_summary",
           "object_of", "parse_label"]

#: a label's word -> the kind it names: the canonical kind words, and "block" (cube), "sphere" (ball)
KIND_WORDS: Dict[str, str] = {**{w: k for k, ws in UNSEEN_SHAPE_WORDS.items() for w in ws}, **{k: k for k in KINDS}}

Position = Tuple[float, float, float]


def parse_label(label: str) -> Tuple[Optional[str], Optional[str]]:
    """(colour, kind) a label names: its first colour word and its last kind word (None where none)."""
    words = str(label).lower().replace("_", " ").split()
    colour = next((w for w in words if w in COLOURS), None)
    kind = next((KIND_WORDS[w] for w in reversed(words) if w in KIND_WORDS), None)
    return colour, kind


def object_of(name: str) -> Optional[Tuple[str, str]]:
    """(colour, kind) of a ground-truth name such as ``red_cube``; None for a name that is no object of
    the map's vocabulary (``table_1``, ``wall_north``)."""
    colour, _, kind = str(name).partition("_")
    return (colour, kind) if colour in COLOURS and kind in KINDS else None


def _position(value, what: str) -> Position:
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: expected an (x, y, z) position, got {value!r}") from exc
    return x, y, z


def _finite(p: Position) -> bool:
    return all(math.isfinite(v) for v in p)


def _r3(p: Position) -> List[float]:
    return [round(v, 3) if math.isfinite(v) else None for v in p]


@dataclass
class AuditResult:
    """What :func:`audit` found; :meth:`as_dict` is what the fetch evaluation records."""

    entries: int = 0
    objects: int = 0                 # ground-truth objects of the map's vocabulary
    matched: int = 0
    correct: int = 0
    unnamed: int = 0                 # entries with an empty label (matched or not)
    duplicates: int = 0              # extra entries on one object at one place
    duplicated_objects: int = 0      # objects with more than one entry at one place
    phantoms: int = 0
    stale: int = 0                   # matched at an object's start place (it has moved since)
    non_finite: int = 0              # entries with a non-finite position (counted as phantoms)
    missed: List[str] = field(default_factory=list)
    wrong_labels: List[Dict] = field(default_factory=list)
    phantom_entries: List[Dict] = field(default_factory=list)
    radius_m: float = 0.15
    height_tol_m: float = 0.15

    @property
    def label_accuracy(self) -> Optional[float]:
        """correct / matched; None without a matched entry."""
        return self.correct / self.matched if self.matched else None

    def as_dict(self) -> Dict:
        acc = self.label_accuracy
        return {"entries": self.entries, "objects": self.objects, "matched": self.matched, "correct": self.correct,
                "label_accuracy": None if acc is None else round(acc, 4), "unnamed": self.unnamed,
                "duplicates": self.duplicates, "duplicated_objects": self.duplicated_objects,
                "phantoms": self.phantoms, "stale": self.stale, "non_finite": self.non_finite,
                "missed": list(self.missed), "wrong_labels": [dict(w) for w in self.wrong_labels],
                "phantom_entries": [dict(p) for p in self.phantom_entries],
                "radius_m": self.radius_m, "height_tol_m": self.height_tol_m}


def audit(entries: Iterable[Sequence], truth: Mapping[str, Sequence[float]], radius: float = 0.15,
          height_tol: float = 0.15, start: Optional[Mapping[str, Sequence[float]]] = None) -> AuditResult:
    """Audit map ``entries`` ((label, x, y, z) each) against ``truth`` ({name: (x, y, z)}), both in one
    frame (module doc for the rules). ``start``: the truth when the map was started (stale entries).

    ``ValueError`` for a bad ``radius`` / ``height_tol``, an entry that is not (label, x, y, z) or a
    position that is not three numbers; a non-finite entry position is a phantom, not an error."""
    radius, height_tol = float(radius), float(height_tol)
    if not (math.isfinite(radius) and radius > 0 and math.isfinite(height_tol) and height_tol >= 0):
        raise ValueError(f"radius must be > 0 and height_tol >= 0 (finite), got {radius}, {height_tol}")
    objects: Dict[str, Tuple[str, str]] = {}
    places: List[Tuple[str, bool, Position]] = []   # (name, is a start place, position)
    for name in sorted(truth):
        kind = object_of(name)
        if kind is None:
            continue
        p = _position(truth[name], f"ground truth '{name}'")
        if not _finite(p):
            continue
        objects[name] = kind
        places.append((name, False, p))
    for name in sorted(start or {}):
        if name not in objects:
            continue
        s = _position(start[name], f"start '{name}'")
        now = next(p for n, st, p in places if n == name and not st)
        if _finite(s) and (math.hypot(s[0] - now[0], s[1] - now[1]) > radius or abs(s[2] - now[2]) > height_tol):
            places.append((name, True, s))

    result = AuditResult(objects=len(objects), radius_m=radius, height_tol_m=height_tol)
    at_place: Dict[Tuple[str, bool], int] = collections.Counter()
    for i, entry in enumerate(entries):
        try:
            label, x, y, z = entry
        except (TypeError, ValueError) as exc:
            raise ValueError(f"map entry {i}: expected (label, x, y, z), got {entry!r}") from exc
        label = "" if label is None else str(label)
        p = _position((x, y, z), f"map entry {i} ({label!r})")
        result.entries += 1
        result.unnamed += not label.strip()
        best = None
        if _finite(p):
            for name, is_start, q in places:
                d = math.hypot(p[0] - q[0], p[1] - q[1])
                if d <= radius and abs(p[2] - q[2]) <= height_tol:
                    key = (d, is_start, name)
                    best = key if best is None or key < best else best
        else:
            result.non_finite += 1
        if best is None:
            result.phantoms += 1
            result.phantom_entries.append({"label": label, "position": _r3(p)})
            continue
        d, is_start, name = best
        result.matched += 1
        result.stale += is_start
        at_place[(name, is_start)] += 1
        if label.strip() and parse_label(label) == objects[name]:
            result.correct += 1
        else:
            result.wrong_labels.append({"label": label, "object": name, "position": _r3(p), "stale": is_start})
    result.duplicates = sum(n - 1 for n in at_place.values())
    result.duplicated_objects = len({name for (name, _), n in at_place.items() if n > 1})
    result.missed = [name for name in objects if not at_place.get((name, False))]
    return result


def audit_map_message(msg, truth: Mapping[str, Sequence[float]], frames: Sequence[str] = ("map",),
                      start: Optional[Mapping[str, Sequence[float]]] = None, **kwargs) -> AuditResult:
    """:func:`audit` of a ``rlstack_interfaces/SemanticMap`` message. Its positions must be in the truth's
    frame: ``frames`` are the frames taken to be the simulator's world (in the fetch graph ``map``: the
    localiser starts at the true start pose); ``ValueError`` for a map in another frame."""
    frame = msg.header.frame_id
    if frame not in frames:
        raise ValueError(f"semantic map in frame '{frame}', not in the ground truth's ({', '.join(frames)})")
    entries = [(o.label, o.position.x, o.position.y, o.position.z) for o in msg.objects]
    return audit(entries, truth, start=start, **kwargs)


def map_audit_line(episode: Mapping) -> str:
    """One line on an episode's map audit (``episode["map_audit"]``), or its error; "" without either."""
    if "map_audit_error" in episode:
        return f"map audit failed: {episode['map_audit_error']}"
    a = episode.get("map_audit")
    if not a:
        return ""
    acc = a.get("label_accuracy")
    wrong = ", ".join(f"\"{w.get('label', '')}\" on {w.get('object', '?')}" for w in a.get("wrong_labels", []))
    return (f"map: {a.get('entries', 0)} entries on {a.get('objects', 0)} objects, {a.get('matched', 0)} matched, "
            f"labels {a.get('correct', 0)}/{a.get('matched', 0)} correct"
            f"{'' if acc is None else f' ({100 * acc:.0f} %)'}, {a.get('duplicates', 0)} duplicate(s), "
            f"{a.get('phantoms', 0)} phantom(s), {a.get('stale', 0)} stale, {len(a.get('missed', []))} missed"
            f"{f'; wrong: {wrong}' if wrong else ''}")


def map_audit_summary(episodes: Sequence[Mapping], top: int = 10) -> Optional[Dict]:
    """The map audits of ``episodes`` (``map_audit`` of each that has one) summed up: totals, label
    accuracy (correct / matched over all maps), duplicates per map (mean, max), phantoms per map (mean,
    max), the ``top`` most frequent wrong labels. None when no episode has an audit or an audit error."""
    audits = [e["map_audit"] for e in episodes if isinstance(e.get("map_audit"), Mapping)]
    errors = sum(1 for e in episodes if "map_audit_error" in e)
    if not audits and not errors:
        return None

    def total(key: str) -> int:
        return sum(int(a.get(key, 0)) for a in audits)

    def per_map(key: str) -> Optional[Dict]:
        values = [int(a.get(key, 0)) for a in audits]
        return {"mean": round(statistics.mean(values), 2), "max": max(values)} if values else None

    matched, correct = total("matched"), total("correct")
    wrong = collections.Counter(f"\"{w.get('label', '')}\" on {w.get('object', '?')}"
                                for a in audits for w in a.get("wrong_labels", []))
    return {
        "maps": len(audits), "errors": errors, "entries": total("entries"), "matched": matched, "correct": correct,
        "label_accuracy": round(correct / matched, 4) if matched else None,
        "unnamed": total("unnamed"), "duplicates": total("duplicates"), "duplicates_per_map": per_map("duplicates"),
        "phantoms": total("phantoms"), "phantoms_per_map": per_map("phantoms"), "stale": total("stale"),
        "missed_per_map_mean": round(statistics.mean(len(a.get("missed", [])) for a in audits), 2) if audits else None,
        "wrong_labels": dict(wrong.most_common(top)),
    }
