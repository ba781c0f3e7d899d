"""Ranking variants: the production ranking (``hybrid``) and the candidates an online
experiment compares with it (``recommender.online.experiments``).

A variant is the production ranking with some of its settings changed: the diversity of its
lists, the weight of each part of the score (``request.Blend``), or no personal part at all
(``popular``: what readers like most, the reader's own papers left out). So every variant
ranks with the same code, over the same context and request, leaves out what production
leaves out (rated, muted, set aside, served), and is explained and calibrated the same way.

Built in: ``hybrid`` (production), ``hybrid-diverse`` (diversity 0.3), ``content-augmented``
(the content score alone: no Fisher term, no collaborative filtering, no popularity, as
``paperrec evaluate``'s method of that name), ``no-collaborative``, ``popular``. An operator
adds their own with ``PAPERREC_RANKING_VARIANTS``: ``name: setting=value ...`` entries
separated by ``;``, settings ``diversity``, ``popularity``, ``collaborative``, ``fisher``
(weights as multiples of production's) and ``personal`` (0 or 1), e.g.
``"cf-heavy: collaborative=3; spread: diversity=0.5"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from recommender.core.errors import InvalidInput
from recommender.ranking.context import RankingContext
from recommender.ranking.interests import rank_interests
from recommender.ranking.rank import Ranked
from recommender.ranking.request import Blend, ListRequest

PRODUCTION = "hybrid"
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


@dataclass(frozen=True)
class Variant:
    name: str
    diversity: float | None = None  # None: the request's
    blend: Blend = field(default_factory=Blend)
    personal: bool = True  # False: ranked as for a reader without likes (popular and broad)

    def rank(self, ctx: RankingContext, request: ListRequest,
             groups: list[np.ndarray]) -> Ranked:
        """The list this variant ranks for ``request`` (``groups``: the reader's
        collections, ``interests.rank_interests``)."""
        return rank_interests(ctx, self.request(request), groups if self.personal else [])

    def request(self, request: ListRequest) -> ListRequest:
        """``request`` as this variant ranks it."""
        changed = replace(request, blend=self.blend)
        if self.diversity is not None:
            changed = replace(changed, diversity=self.diversity)
        if not self.personal:
            changed = replace(changed, liked=np.zeros(0, np.int64), liked_vectors=None,
                              hidden=np.union1d(request.hidden, request.liked))
        return changed


BUILT_IN: dict[str, Variant] = {
    variant.name: variant for variant in (
        Variant(PRODUCTION),
        Variant("hybrid-diverse", diversity=0.3),
        Variant("content-augmented", blend=Blend(popularity=0.0, collaborative=0.0, fisher=0.0)),
        Variant("no-collaborative", blend=Blend(collaborative=0.0)),
        Variant("popular", diversity=0.0, personal=False),
    )
}
_KNOBS = ("diversity", "popularity", "collaborative", "fisher", "personal")


def parse_variants(text: str) -> dict[str, Variant]:
    """The variants ``PAPERREC_RANKING_VARIANTS`` defines (see the module's docstring);
    ValueError saying what is wrong."""
    found: dict[str, Variant] = {}
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        name, colon, settings = entry.partition(":")
        name = name.strip()
        if not colon or not NAME.match(name):
            raise ValueError(f"{entry!r}: write name: setting=value ..., the name in lower "
                             f"case letters, digits and dashes")
        if name in BUILT_IN or name in found:
            raise ValueError(f"the variant {name!r} is defined twice (built in: "
                             f"{', '.join(BUILT_IN)})")
        values: dict[str, float] = {}
        for pair in settings.split():
            knob, equals, value = pair.partition("=")
            if not equals or knob not in _KNOBS:
                raise ValueError(f"{name}: {pair!r} is not setting=value with a setting of "
                                 f"{', '.join(_KNOBS)}")
            try:
                values[knob] = float(value)
            except ValueError:
                raise ValueError(f"{name}: {knob} must be a number, got {value!r}") from None
            if values[knob] < 0 or (knob in ("diversity", "personal") and values[knob] > 1):
                raise ValueError(f"{name}: {knob} must be at least 0"
                                 + (" and at most 1" if knob in ("diversity", "personal")
                                    else ""))
        found[name] = Variant(
            name, values.get("diversity"),
            Blend(values.get("popularity", 1.0), values.get("collaborative", 1.0),
                  values.get("fisher", 1.0)),
            values.get("personal", 1.0) >= 0.5)
    return found


def variants(configured: str = "") -> dict[str, Variant]:
    """The built-in variants and those ``configured`` (``PAPERREC_RANKING_VARIANTS``)."""
    return {**BUILT_IN, **parse_variants(configured)}


def variant_named(name: str, configured: str = "") -> Variant:
    known = variants(configured)
    if name not in known:
        raise InvalidInput(f"unknown ranking variant {name!r}; choose from "
                           f"{', '.join(known)} (or define one in PAPERREC_RANKING_VARIANTS)")
    return known[name]
