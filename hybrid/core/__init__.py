"""The ground layer: what every other part of the project stands on, importing nothing of the project above it.

Records (:mod:`hybrid.core.records`), errors that name the file and line (:mod:`hybrid.core.errors`),
atomic writes (:mod:`hybrid.core.atomic`), provenance of artifacts (:mod:`hybrid.core.provenance`), the
file formats users bring (:mod:`hybrid.core.formats`) and the bridge to the Java VM
(:mod:`hybrid.core.jvm`, :mod:`hybrid.core.anserini`, :mod:`hybrid.core.java`), the stage interface every
retriever and reranker implements (:mod:`hybrid.core.stage`), measures over runs and qrels
(:mod:`hybrid.core.measures`, :mod:`hybrid.core.judged`) and score normalisations (:mod:`hybrid.core.normalize`).
See ``docs/architecture.md`` for the layers.
"""
