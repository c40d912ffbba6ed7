"""Scaling out: batch jobs on Ray (or in-process without it) and search over sharded indexes.

* :mod:`hybrid.core.ray_engine` (in the ground layer, since index builds use it too) - one engine
  interface, two implementations: Ray Data / Ray actors (local mode or a cluster) and an in-process
  engine used when Ray is not installed.
* :mod:`hybrid.scale.sharded_search` - a sharded index opened as one
  :class:`~indexes.sparse_index.SparseIndex`: every Lucene search fans out to all shards with
  collection-wide statistics and is merged per query, so the retrievers return exactly the ranking of
  one index over the whole corpus.

The sharded build itself lives in :mod:`indexes.shards`.
"""
