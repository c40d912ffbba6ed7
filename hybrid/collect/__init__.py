"""Event-centric collection building (issue 24): an event in, the documents about it out.

After "Building event-centric sub-collections from web archives" (paper 003): related entities of the
event (:mod:`hybrid.collect.related`: ContFreq, CheapEntRel; a knowledge base from :mod:`hybrid.collect.kb`
when the user has one), their detection in documents with the raw-text annotation pipeline
(:mod:`hybrid.collect.collection`), document rankers over several query representations
(:mod:`hybrid.collect.rankers`), and their learning-to-rank combination (:mod:`hybrid.collect.ltr`). Events are
given by name and/or marked seed mentions (:mod:`hybrid.collect.events`); ECB+ sub-topics make an
evaluation set (:mod:`hybrid.collect.ecb`). ``python -m hybrid.collect`` is the command.
"""
