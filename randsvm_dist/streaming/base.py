"""The shared streaming-learner protocol: labels, validation, one-vs-rest, merging.

A streaming classifier is a scikit-learn estimator whose learning is done by one *binary
learner* per class pair (binary problems) or per class (one-vs-rest). Subclasses implement
``_new_binary(n_features, seed)`` returning an object with:

- ``partial_fit(X, y)``: X float32 ndarray or CSR (already validated), y float64 in {-1, +1};
- ``decision_function(X) -> ndarray (n_rows,)``;
- ``merge(other) -> binary learner`` (a new object; inputs unchanged);
- ``n_core`` (int): points/support vectors kept.

This base class does everything else: ``partial_fit(X, y, classes=)``, ``fit``,
``predict``, ``decision_function``, ``score``, ``merge`` and per-class seeding from one
``random_state`` (so results do not depend on which worker ran what; None draws a fresh
seed at the first ``partial_fit``, recorded as ``random_seed_``).
"""

from __future__ import annotations

import copy

import dask
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from randsvm_dist.engine.inputs import apply_to_dask, dask_accuracy, is_dask_collection
from randsvm_dist.exceptions import NotFittedError, SchemaError
from randsvm_dist.seeds import derive_seed, resolve_seed
from randsvm_dist.validation import check_classes, check_features, check_labels, class_index


class StreamingClassifier(ClassifierMixin, BaseEstimator):
    """Base class of the one-pass learners (see the module docstring)."""

    def _new_binary(self, n_features: int, seed: int):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- fitting ---------------------------------------------------------------------------
    def partial_fit(self, X, y, classes=None):
        """Learn from one batch of rows.

        Args:
            X: (n_rows, n_features) dense or scipy sparse.
            y: (n_rows,) labels.
            classes: all labels of the stream; required on the first call.

        Returns:
            self

        Raises:
            SchemaError: bad X/y, unknown label, one class, wrong feature count.
        """
        first = not hasattr(self, "learners_")
        if first:
            if classes is None:
                raise SchemaError("classes= is required on the first call to partial_fit")
            self.classes_ = check_classes(classes, where="classes=")
        X = check_features(X, None if first else self.n_features_in_,
                           model=type(self).__name__)
        y = check_labels(y, X.shape[0])
        if first:
            self.n_features_in_ = X.shape[1]
            n_learners = 1 if len(self.classes_) == 2 else len(self.classes_)
            self.random_seed_ = resolve_seed(getattr(self, "random_state", None))
            self.learners_ = [self._new_binary(X.shape[1], derive_seed(self.random_seed_, k))
                              for k in range(n_learners)]
            self.n_seen_ = 0
        targets = self._targets(y)
        if X.shape[0]:
            for learner, t in zip(self.learners_, targets):
                learner.partial_fit(X, t)
            self.n_seen_ += X.shape[0]
        return self

    def _targets(self, y: np.ndarray) -> list[np.ndarray]:
        """±1 targets per binary learner; SchemaError naming the first unknown label."""
        classes = self.classes_
        if len(classes) == 2:  # comparisons: cheaper than a search on long streams
            is_pos = y == classes[1]
            if (~is_pos & (y != classes[0])).any():
                class_index(y, classes)  # raises, naming the row
            return [is_pos * 2.0 - 1.0]
        idx = class_index(y, classes)
        return [np.where(idx == k, 1.0, -1.0) for k in range(len(classes))]

    def fit(self, X, y):
        """Forget what was learnt and make one pass over (X, y) in row order.

        Raises:
            SchemaError: bad X/y or fewer than two classes in y.
        """
        for attr in ("learners_", "classes_", "n_features_in_", "n_seen_", "random_seed_"):
            self.__dict__.pop(attr, None)
        if is_dask_collection(X) or is_dask_collection(y):
            return self._fit_dask(X, y)
        X = check_features(X, min_rows=1)
        y_arr = check_labels(y, X.shape[0])
        return self.partial_fit(X, y_arr, classes=check_classes(np.unique(y_arr), where="y"))

    def _fit_dask(self, X, y):
        """One pass over the Dask row blocks in order, one block in memory at a time."""
        import dask.array as da

        from randsvm_dist.engine.inputs import aligned_blocks, as_dask_array

        Xa, ya = aligned_blocks(as_dask_array(X, "X"), as_dask_array(y, "y"))
        classes = check_classes(da.unique(ya).compute(), where="y")
        for xb, yb in zip(Xa.to_delayed().ravel(), ya.to_delayed().ravel()):
            xb, yb = dask.compute(xb, yb)
            self.partial_fit(xb, yb, classes=classes)
        return self

    # -- prediction ------------------------------------------------------------------------
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "learners_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_fitted(self):
        if not hasattr(self, "learners_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet")

    def decision_function(self, X) -> np.ndarray:
        """Signed scores: (n_rows,) for two classes (positive means classes_[1]),
        (n_rows, n_classes) one-vs-rest otherwise."""
        self._check_fitted()
        if is_dask_collection(X):
            return apply_to_dask(self, "decision_function", X)
        X = check_features(X, self.n_features_in_, model=type(self).__name__)
        scores = [learner.decision_function(X) for learner in self.learners_]
        return scores[0] if len(scores) == 1 else np.column_stack(scores)

    def predict(self, X) -> np.ndarray:
        """Predicted labels for the rows of X (a lazy dask array for Dask input)."""
        if is_dask_collection(X):
            self._check_fitted()
            return apply_to_dask(self, "predict", X)
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on (X, y); Dask input is scored on the default Dask scheduler."""
        if is_dask_collection(X) and sample_weight is None:
            self._check_fitted()
            return dask_accuracy(self, X, y)
        return super().score(X, y, sample_weight)

    @property
    def n_core_(self) -> int:
        """Points (or support vectors) kept, summed over the binary learners."""
        self._check_fitted()
        return int(sum(learner.n_core for learner in self.learners_))

    # -- combination -----------------------------------------------------------------------
    def merge(self, other: StreamingClassifier) -> StreamingClassifier:
        """Combine two learners fitted on disjoint parts of one data set.

        Returns:
            a new learner (the inputs are unchanged).

        Raises:
            SchemaError: different types, classes or feature counts.
        """
        self._check_fitted()
        other._check_fitted()
        if type(other) is not type(self):
            raise SchemaError(f"cannot merge {type(self).__name__} with {type(other).__name__}")
        if not np.array_equal(self.classes_, other.classes_):
            raise SchemaError(
                f"cannot merge learners with classes {self.classes_.tolist()} and "
                f"{other.classes_.tolist()}"
            )
        if self.n_features_in_ != other.n_features_in_:
            raise SchemaError(
                f"cannot merge learners with {self.n_features_in_} and "
                f"{other.n_features_in_} features"
            )
        out = copy.copy(self)
        out.learners_ = [a.merge(b) for a, b in zip(self.learners_, other.learners_)]
        out.n_seen_ = self.n_seen_ + other.n_seen_
        return out
