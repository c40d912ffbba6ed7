"""Scaling out: batch jobs on Ray (or in-process without it) and search over sharded indexes.

* :mod:`hybrid.core.ray_engine` (in the ground layer, since index builds use it too) - one engine
  interface, two implementations: Ray Data / Ray actors (local mode or a cluster) and an in-process
  engine used when Ray is not installed.
* :mod:`hybrid.scale.sharded_search` - the retrievers that search a sharded index their own way
  (multi-field's collapse search, dense over the shards' parts) and :func:`shard_retriever`.

The sharded index reader (:mod:`indexes.sharded_index`: a sharded index opened as one
:class:`~indexes.sparse_index.SparseIndex`, every Lucene search fanned out to all shards with collection-wide
statistics and merged per query, so the retrievers return exactly the ranking of one index over the whole
corpus) and the sharded build (:mod:`indexes.shards`) live with the other indexes.
"""
