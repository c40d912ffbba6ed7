"""The model store: trained models named by what they are, not by the collection they were first used on.

* :mod:`hybrid.store.models` - *model sets* (a bi-encoder, LTR models, a reader trained together, with a
  manifest saying on what and with which code), where they live (``--artifacts DIR``, ``$HYBRID_ARTIFACTS``
  or ``$HYBRID_CACHE/models``), and the index-bound side: the dense index of *this* sparse index made by
  *this* encoder, found through the sparse index.
* :mod:`hybrid.store.pack` - one file that carries a model set to another machine (manifest, sha256 of every
  file, training provenance, code version), verified before anything is placed.

Only the ground layer (:mod:`hybrid.core`) is imported here: the store reads and writes files and manifests,
it never loads a model.
"""
