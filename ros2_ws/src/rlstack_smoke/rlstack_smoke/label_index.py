"""The smoke map's core (no rclpy): remember labelled objects, rank them for a text query.

A deliberately simple stand-in for the semantic map: a query matches an object by the
fraction of the query's words found in the object's label. It exists so the smoke graph
exercises a real message and a real service with real content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")
# Words that carry no meaning in a query like "the yellow cube".
_STOP_WORDS = frozenset({"a", "an", "the", "some", "any", "of"})


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS}


@dataclass
class Entry:
    object_id: int
    label: str
    position: tuple[float, float, float]
    observations: int = 1


class LabelIndex:
    """Objects keyed by id; ``query`` ranks them by word overlap with their labels."""

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, object_id: object) -> bool:
        return object_id in self._entries

    def observe(self, object_id: int, label: str, position: tuple[float, float, float]) -> Entry:
        entry = self._entries.get(object_id)
        if entry is None:
            entry = self._entries[object_id] = Entry(object_id, label, position)
        else:
            entry.label, entry.position = label, position
            entry.observations += 1
        return entry

    def query(self, text: str, max_results: int = 0, min_score: float = 0.0) -> list[tuple[Entry, float]]:
        """Entries whose score (share of query words in the label) passes ``min_score``, best first.

        An empty query (no meaningful words) matches nothing. ``max_results`` 0 means all.
        """
        wanted = words(text)
        if not wanted:
            return []
        scored = []
        for entry in self._entries.values():
            score = len(wanted & words(entry.label)) / len(wanted)
            if score > 0.0 and score >= min_score:
                scored.append((entry, score))
        scored.sort(key=lambda pair: (-pair[1], pair[0].object_id))
        return scored[:max_results] if max_results else scored
