"""One-pass streaming SVM learners (usable alone and as per-partition reducers)."""

from .base import StreamingClassifier

__all__ = ["StreamingClassifier"]
