"""Recipe system type ``eventcoll``: one event-collection ranker as a stage (event topics -> documents).

Keys: ``ranker`` (one of :data:`hybrid.collect.rankers.RANKERS`, default ``emb-ent+pass``, *our-light*),
``kb`` (a knowledge-base JSONL, optional), ``entities_cache`` (a file caching the collection's detected
entities, relative to the artifacts directory). The collection is the index's stored passages,
annotated once per process. The LambdaMART combination (*our-full*) is the type ``eventcoll-ltr``,
registered in :mod:`hybrid.recipe_builders` with the other learned rerankers (this layer never imports
``ltr``).
"""

from __future__ import annotations

from hybrid.collect.kb import read_kb
from hybrid.collect.rankers import RANKERS
from hybrid.collect.stage import EventCollector, collection_of
from hybrid.recipes import Context, RecipeSource, register

EVENT_KEYS = {"kb", "entities_cache"}


def collector_for(system: dict, context: Context, source: RecipeSource, ranker: str = "emb-ent+pass",
                  **kwargs) -> EventCollector:
    """An :class:`EventCollector` over the context's index, its collection built when first searched."""
    from hybrid.recipe_builders import artifact_path

    kb = read_kb(system["kb"]) if system.get("kb") else None
    cache = None
    if system.get("entities_cache"):
        cache = artifact_path(system["entities_cache"], "entities_cache", "eventcoll", context, source,
                              must_exist=False)
    return EventCollector(lambda: collection_of(context.index, kb, cache), ranker=ranker, kb=kb, k=context.hits,
                          **kwargs)


@register("eventcoll", EVENT_KEYS | {"ranker"}, topics="events")
def _eventcoll(system: dict, context: Context, source: RecipeSource) -> EventCollector:
    ranker = system.get("ranker", "emb-ent+pass")
    if ranker not in RANKERS:
        raise source.error("ranker", f"unknown ranker {ranker!r}; known: {list(RANKERS)}")
    return collector_for(system, context, source, ranker=ranker)
