"""Pair features for learning to rank: (query mention, candidate mention, retrieval context) -> numbers.

One module per group (``strings``, ``types``, ``chains``, ``arguments``, ``context``,
``first_stage``; external groups in ``external``); :mod:`features.pairs.registry` lists them.
"""
