"""Recipe system types of event-collection building (event topics in, documents out).

``eventcoll``: one ranker of :mod:`hybrid.collect` as a stage. Keys: ``ranker`` (one of
:data:`hybrid.collect.rankers.RANKERS`, default ``emb-ent+pass``, *our-light*), ``kb`` (a knowledge-base
JSONL, optional), ``entities_cache`` (a file caching the collection's detected entities, relative to the
artifacts directory). The collection is the index's stored passages, annotated once per process.

``eventcoll-ltr``: *our-full*, LambdaMART (:mod:`hybrid.collect.ltr`) over those rankers; ``model`` names the
trained model (an artifact).
"""

from __future__ import annotations

from hybrid.collect.kb import read_kb
from hybrid.collect.ltr import EventModel
from hybrid.collect.rankers import RANKERS
from hybrid.collect.stage import EventCollector, collection_of
from hybrid.core.params import Param
from hybrid.core.stage import Stage
from hybrid.recipes.builders import artifact_path
from hybrid.recipes.registry import Context, RecipeSource, register

#: What both event-collection system types take.
EVENT_PARAMS = [
    Param("kb", str, None, "a knowledge-base JSONL (entity, aliases, description, links)"),
    Param("entities_cache", str, None, "a file caching the collection's detected entities (an artifact path; "
                                       "written on first use)"),
]


def collector_for(system: dict, context: Context, source: RecipeSource, ranker: str = "emb-ent+pass",
                  **kwargs) -> EventCollector:
    """An :class:`EventCollector` over the context's index, its collection built when first searched."""
    kb = read_kb(system["kb"]) if system["kb"] else None
    cache = None
    if system["entities_cache"]:
        cache = artifact_path(system["entities_cache"], "entities_cache", "eventcoll", context, source,
                              must_exist=False)
    return EventCollector(lambda: collection_of(context.index, kb, cache), ranker=ranker, kb=kb, k=context.hits,
                          **kwargs)


@register("eventcoll", [*EVENT_PARAMS, Param("ranker", str, "emb-ent+pass", f"one of {', '.join(RANKERS)}")],
          topics="events")
def _eventcoll(system: dict, context: Context, source: RecipeSource) -> EventCollector:
    """One event-collection ranker over whole documents (event topics in, documents out)."""
    ranker = system["ranker"]
    if ranker not in RANKERS:
        raise source.error("ranker", f"unknown ranker {ranker!r}; known: {list(RANKERS)}")
    return collector_for(system, context, source, ranker=ranker)


@register("eventcoll-ltr",
          [*EVENT_PARAMS, Param("model", str, None, "the trained model (an artifact path)", required=True)],
          topics="events")
def _eventcoll_ltr(system: dict, context: Context, source: RecipeSource) -> Stage:
    """*our-full* of event-collection building: LambdaMART (:mod:`hybrid.collect.ltr`) over the rankers of
    :mod:`hybrid.collect` (event topics in, documents out)."""
    model = EventModel.load(artifact_path(system["model"], "model", "eventcoll", context, source))
    return collector_for(system, context, source, combiner=model.combiner(), rankers=model.rankers,
                         depth=model.depth)
