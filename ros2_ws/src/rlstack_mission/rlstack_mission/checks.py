"""What the camera sees and the hand holds, checked (pure Python, no rclpy): which of the semantic
map's matches to take (:func:`best_match`), the words a close look is checked against
(:func:`expected_shape_words`) and a query's look-alike wording (:func:`look_alike_query`), and
whether a close look's footprint and size fit the shape a label names (:func:`footprint_mismatch`,
:func:`height_mismatch`) and the hand's opening (:func:`too_wide`).

The mission (:mod:`rlstack_mission.fetch`) and its ROS ports (the grasp pose's checks) use them.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

from .mission_types import FetchCode, GraspOutcome, Match


def best_match(matches: Sequence[Match], min_score: float, near: Optional[Tuple[float, float]] = None,
               max_shift: float = math.inf, avoid: Sequence[Match] = ()) -> Optional[Match]:
    """The best-scoring match at or above ``min_score`` (optionally within ``max_shift`` of ``near``),
    none within ``max_shift`` (or 0.25 m) of a match in ``avoid``."""
    ok = [m for m in matches if math.isfinite(m.score) and m.score >= min_score
          and all(math.isfinite(v) for v in (m.x, m.y, m.z))]
    if near is not None:
        ok = [m for m in ok if math.hypot(m.x - near[0], m.y - near[1]) <= max_shift]
    gate = max_shift if math.isfinite(max_shift) else 0.25
    ok = [m for m in ok if all(math.hypot(m.x - a.x, m.y - a.y) > gate for a in avoid)]
    return max(ok, key=lambda m: m.score) if ok else None


#: shape words of a label whose footprint seen from above is round / square
ROUND_SHAPES = ("ball", "cylinder", "sphere")
SQUARE_SHAPES = ("cube", "box", "block")


#: the words of a label that promise as much height as width (a cube)
EQUAL_SIDED_SHAPES = ("cube",)
#: the words of a label that promise an object lower than it is wide (the toy brick: 3.7 cm on 5.1 cm);
#: not "brick": people call a cube that too (a training word of the cube kind), and it is a colour
FLAT_SHAPES = ("lego", "duplo")


def _words(text: str) -> List[str]:
    """The lower-case words of a query or label, without trailing punctuation ("the red lego." names
    a lego): every shape check and the look-alike wording read words the same way."""
    return [w.lower().strip(".,!?") for w in text.split()]


def expected_shape_words(query: str, label: str) -> str:
    """The words a close look is checked against: the user's ``query`` when it names a shape (the
    map's label may name another: a green cube the map called "green cylinder" was set aside as
    "not a cylinder" although a cube was asked for), else the map's ``label``."""
    return query if any(w in ROUND_SHAPES + SQUARE_SHAPES + FLAT_SHAPES for w in _words(query)) else label


def look_alike_query(query: str, look_alikes: Sequence[Tuple[str, str]]) -> str:
    """``query`` with each word that has a look-alike replaced by it ("bring the red lego" -> "bring
    the red cube"), or '' when it names none."""
    table = {w.lower(): alike for w, alike in look_alikes}
    words = query.split()
    swapped = [table.get(key, w) for key, w in zip(_words(query), words)]
    return " ".join(swapped) if swapped != words else ""


def named_round_for_square(query: str, label: str) -> bool:
    """Whether ``query`` asks for a square shape (a cube) and the map names the answer a round one (a
    ball, a cylinder). Such an answer is not taken as a look-alike: from afar (an object on the floor)
    the close look does not trust the footprint, and a ball is as high as it is wide, so nothing
    there would tell it from the cube."""
    asked, named = _words(query), _words(label)
    return any(w in SQUARE_SHAPES for w in asked) and any(w in ROUND_SHAPES for w in named)


def footprint_mismatch(label: str, symmetric: bool) -> str:
    """Why a close look's footprint (``symmetric``: round) contradicts ``label``, or ''.

    The map's crop embedder, seeing an upright cylinder side-on from afar, can take it for a cube of
    the same colour (seeds 4 and 8 of the evaluation); from close by the grasp pose estimator sees
    its round top. Not conclusive on its own: under the RGB-D depth noise a cube's 5 cm top seen from
    1 m reads round in about half the views (docs/reference/perception.md), so the mission looks again before
    it believes it, and does not trust it from afar (:func:`height_mismatch` is conclusive)."""
    words = _words(label)
    if symmetric and any(w in SQUARE_SHAPES for w in words):
        return f"the close look shows a round object, not a {next(w for w in words if w in SQUARE_SHAPES)}"
    if not symmetric and any(w in ROUND_SHAPES for w in words):
        return f"the close look shows a square footprint, not a {next(w for w in words if w in ROUND_SHAPES)}"
    return ""


def height_mismatch(label: str, size: Optional[Sequence[float]], cube_max_aspect: float = 1.38,
                    cube_min_aspect: float = 0.0, brick_max_aspect: float = 0.0) -> str:
    """Why a close look's ``size`` (along, across, height), m, contradicts the shape ``label`` names, or ''.

    Conclusive checks of the height over the wider side (the aspect), each off at 0:

    * a "cube" is as high as it is wide: above ``cube_max_aspect`` it is another object (an upright
      cylinder stands 1.6x as high as wide). Measured under depth noise: cubes reach 1.28, cylinders
      start at 1.48 (docs/reference/perception.md).
    * a "cube" below ``cube_min_aspect`` is a flatter object (a toy brick: 0.73). Measured from the
      docking range: cubes 0.94-1.26, bricks 0.56-0.74; from ~1 m cubes read down to 0.77, so the
      caller leaves this one out for a look from afar.
    * a "lego"/"duplo" above ``brick_max_aspect`` is not the brick (a cube of its size: the map
      took one for "the red lego" in 2 of 12 fetches). Bricks read up to 0.78 from either range.

    0 or no size: not checked."""
    if size is None:
        return ""
    along, across, height = (float(v) for v in size)
    width = max(along, across)
    if width <= 0:
        return ""
    words = _words(label)
    aspect = height / width
    seen = f"an object {height * 100:.1f} cm high on a {width * 100:.1f} cm footprint"
    if any(w in EQUAL_SIDED_SHAPES for w in words):
        if cube_max_aspect > 0 and aspect > cube_max_aspect:
            return f"the close look shows {seen}, not a cube"
        if cube_min_aspect > 0 and aspect < cube_min_aspect:
            return f"the close look shows {seen}, flatter than a cube"
    flat = next((w for w in words if w in FLAT_SHAPES), None)
    if flat is not None and brick_max_aspect > 0 and aspect > brick_max_aspect:
        return f"the close look shows {seen}, too high for a {flat}"
    return ""


def too_wide(size: Optional[Sequence[float]], max_width: float) -> str:
    """Why a close look's ``size`` (along, across, height), m, is more than the hand can close on, or ''.

    The narrower side of the footprint is what the fingers close across; above ``max_width`` (the
    Panda hand opens 8 cm) no lift can hold it, whatever the map called it. Measured under the depth
    noise (``rlstack_perception.evaluate_grasp_pose --scene home_kinds --depth-noise``, both ranges):
    cubes and toy bricks read at most 5.1 cm; books, bowls, plates and buckets 7.6 cm or more from
    ~1 m (a part of one seen from close by can read narrower: then this does not refuse it).
    0 or no size: not checked."""
    if size is None or max_width <= 0:
        return ""
    narrow = min(float(size[0]), float(size[1]))
    if narrow <= max_width:
        return ""
    return (f"the close look shows an object {narrow * 100:.1f} cm across at its narrower side, "
            f"wider than the hand can take ({max_width * 100:.1f} cm)")


def _set_aside_code(outcome: GraspOutcome) -> FetchCode:
    """How the mission ends when a match set aside by ``outcome``'s close look was the last one:
    NOT_FOUND for another kind of object, GRASP_FAILED for one the hand cannot take."""
    return FetchCode.GRASP_FAILED if outcome.ungraspable else FetchCode.NOT_FOUND
