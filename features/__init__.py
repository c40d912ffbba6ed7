"""Annotation: passages -> mention-level records with the fields the index and the rankers use."""

from features.annotate import AnnotationConfig, Annotator, MentionRecord

__all__ = ["AnnotationConfig", "Annotator", "MentionRecord"]
