"""A query's wording put in the form the query side reads best, before it is embedded.

Two rewrites, both no-ops on every training wording (so the query head needs no retraining):

English refers back to an object with "one": "the can, the blue one", "the doorknob, the one that is
yellow". The query head (MiniLM embedding -> colour/kind compatibility) learnt "one" as a category
word ("the red one": any red thing), so in those sentences it accepts every kind, and a thing that is
not in the map ("the doorknob, ...") matched whatever of that colour was there (measured on the fifth
held-out set, nineteenth session: "the doorknob that is yellow" scores a cylinder 0.23, "the doorknob,
the one that is yellow" 0.96). :func:`canonical_query` rewrites such a sentence to the plain order
("the blue can", "the yellow doorknob").

Colour names that are also things ("cranberry", "apple green", "banana yellow") made the head read an
absent kind ("the cranberry cube": cube 0.0; the colour rule already had the colour right). With a
``colour_rule`` (:class:`~rlstack_perception.colour_words.ColourRule`), the first colour name is replaced
by the training colour word the rule grounds it with ("the cranberry cube" -> "the ruby cube"),
a word the head learnt as a colour; the rule's class is unchanged, since that word's nearest anchor is
itself. Every other query is returned unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from rlstack_perception.colour_words import _norm, lexicon
from rlstack_perception.noun_words import CUT_WORDS, NOT_HEADS

# "<the X>, the one that is <C>" / "..., the one which is <C>" / "..., the one that's <C>"
_ONE_THAT_IS = re.compile(
    r"(?P<det>\b(?:the|that|this|a|an|my|your)\s+)(?P<np>[^,]+?)\s*,\s*the\s+one\s+"
    r"(?:(?:that|which)\s+is|that's|which's)\s+(?P<col>[^,?.!]+?)\s*(?P<rest>[,?.!].*)?$",
    re.IGNORECASE)
# "<the X>, the <C> one"
_THE_C_ONE = re.compile(
    r"(?P<det>\b(?:the|that|this|a|an|my|your)\s+)(?P<np>[^,]+?)\s*,\s*the\s+(?P<col>[^,?.!]+?)\s+one\b\s*"
    r"(?P<rest>[,?.!].*)?$",
    re.IGNORECASE)


def canonical_query(text: str, colour_rule=None, not_colours: Iterable[str] = ()) -> str:
    """``text`` with a back-reference by "one" folded into the noun phrase it refers to ("the can, the
    blue one, please" -> "the blue can, please") and, with ``colour_rule``, its first colour name (phrases
    in ``not_colours`` are none: "brick") replaced by the anchor word the rule grounds it with."""
    text = fold_one(text)
    return anchor_colour(text, colour_rule, not_colours) if colour_rule is not None else text


def anchor_colour(text: str, colour_rule, not_colours: Iterable[str] = ()) -> str:
    """The first colour name of ``text`` replaced by its nearest anchor (a training colour word).

    A colour name lying wholly inside a phrase of ``not_colours`` (the kind words and absent things of the
    training lists: the "tea" of "tea tray", "tomato") is a thing's name, not a colour, and is left alone;
    one reaching past it is a colour ("apple green")."""
    lex = lexicon()
    spans = [(m.start(), m.end(), _norm(m.group())) for m in re.finditer(r"[A-Za-z][A-Za-z']*", text)]
    words = [w for _a, _b, w in spans]
    blocked = [False] * len(words)
    phrases, longest = _phrase_set(tuple(not_colours))
    i = 0
    while i < len(words):
        n = next((n for n in range(min(longest, len(words) - i), 0, -1) if tuple(words[i:i + n]) in phrases), 0)
        for k in range(i, i + n):
            blocked[k] = True
        i += max(n, 1)
    for i in range(len(words)):
        for n in range(min(4, len(words) - i), 0, -1):
            name = " ".join(words[i:i + n])
            if all(blocked[i:i + n]) or name not in lex:   # a colour name only inside a thing's name is none
                continue
            if not all(_joins(text[spans[k][1]:spans[k + 1][0]]) for k in range(i, i + n - 1)):
                continue   # not one name across punctuation ("brick: red", "brick - red")
            if not _used_as_colour(text, spans, words, i, n):
                break   # "the banana that is yellow": the thing asked for, not its colour
            _colour, anchor = colour_rule.classify(lex[name])
            if anchor == name:
                return text
            return text[:spans[i][0]] + anchor + text[spans[i + n - 1][1]:]
    return text


@lru_cache(maxsize=8)
def _phrase_set(not_colours: tuple):
    """(set of word tuples, longest length) of the phrases, built once per list."""
    phrases = {tuple(_norm(p).split()) for p in not_colours} - {()}
    return phrases, max((len(p) for p in phrases), default=0)


def _joins(between: str) -> bool:
    """Whether two words with ``between`` between them can be one name: spaces, or a hyphen ("sky-blue")."""
    return not between.strip() or between == "-"


#: words before a colour name that make it the predicate ("the cube that is cranberry", "painted cranberry")
_PREDICATE_CUES = frozenset("is are that's thats it's its in coloured colored painted colour color".split())


def _used_as_colour(text: str, spans, words, i: int, n: int) -> bool:
    """Whether the colour name at words[i:i+n] is used as a colour: before the noun it colours (no
    punctuation or clause word between) or after a predicate cue; otherwise it is the noun itself."""
    if i > 0 and words[i - 1] in _PREDICATE_CUES:
        return True
    if i + n >= len(words):
        return False
    between = text[spans[i + n - 1][1]:spans[i + n][0]]
    return _joins(between) and words[i + n] not in CUT_WORDS and words[i + n] not in NOT_HEADS


def fold_one(text: str) -> str:
    """"the can, the blue one, please" -> "the blue can, please"; other texts unchanged."""
    for pattern in (_ONE_THAT_IS, _THE_C_ONE):
        m = pattern.search(text)
        if m is None or not m.group("np").strip() or not m.group("col").strip():
            continue
        if m.group("col").strip().lower() in ("one", "other", "same"):
            continue
        rest = m.group("rest") or ""
        return f"{text[:m.start()]}{m.group('det')}{m.group('col').strip()} {m.group('np').strip()}{rest}"
    return text
