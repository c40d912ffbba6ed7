"""Learning to rank over first-stage runs: feature sets, learners, cross-validation, ablations.

``ltr/reader/`` (the neural reader) is a separate sub-package. Importing ``ltr`` registers the feature
providers that wrap the Java extractor, the dense index and the reader (:mod:`ltr.providers`) into the feature
registry of ``features.pairs``, which cannot import them itself (it sits below them). The providers that wrap
retrievers sit above ``ltr``, in :mod:`hybrid.retrieval.providers`, and register from there.
"""

from ltr import providers as providers  # noqa: F401  (registers the external feature providers)
