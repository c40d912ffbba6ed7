"""Learning to rank over first-stage runs: feature sets, learners, cross-validation, ablations.

``ltr/reader/`` (the neural reader) is a separate sub-package; this file stays tiny on purpose.
"""
