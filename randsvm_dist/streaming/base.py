"""The shared streaming-learner protocol: labels, weights, validation, one-vs-rest, merging.

A streaming classifier is a scikit-learn estimator whose learning is done by one *binary
learner* per class pair (binary problems) or per class (one-vs-rest). Subclasses implement
``_new_binary(n_features, seed)`` returning an object with:

- ``partial_fit(X, y, sample_weight)``: X float32 ndarray or CSR (already validated), y
  float64 in {-1, +1}, sample_weight None (every row weight 1) or float64 (n_rows,) > 0;
- ``decision_function(X) -> ndarray (n_rows,)``;
- ``merge(other) -> binary learner`` (a new object; inputs unchanged);
- ``n_core`` (int): points/support vectors kept.

This base class does everything else: ``partial_fit(X, y, classes=, sample_weight=)``,
``fit``, ``predict``, ``decision_function``, ``score``, ``merge``, the row weights
(``sample_weight`` times ``class_weight``) and per-class seeding from one ``random_state``
(so results do not depend on which worker ran what; None draws a fresh seed at the first
``partial_fit``, recorded as ``random_seed_``).

Weights follow scikit-learn's SVC: a row's weight multiplies its loss term (its C);
rows of weight zero **or negative** are dropped (LIBSVM, hence SVC, removes them), and a
``fit`` whose rows all have weight <= 0 raises ParameterError. ``class_weight`` is None, a
dict {label: weight} (labels not in it weigh 1) or 'balanced'. On a stream 'balanced' is
fixed once, from the labels of the **first** ``partial_fit`` batch:
``n_rows / (n_classes * count(label))``, as scikit-learn computes it from ``y`` (``fit``
passes all of y as that batch; :func:`randsvm_dist.distributed.streaming.fit_streaming` counts the
labels of the whole data set first). A class missing from the first batch weighs 1. The
resolved weights are ``class_weight_`` (one per ``classes_``).

No module of this package imports Dask: distributed fitting, prediction and scoring on Dask
collections and Parquet data sets is :mod:`randsvm_dist.distributed.streaming`'s
(``DaskStreamingClassifier``, ``fit_streaming``).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin

from randsvm_dist.core.seeds import derive_seed, resolve_seed
from randsvm_dist.core.validation import (
    balanced_class_weight,
    check_classes,
    check_features,
    check_labels,
    check_sample_weight,
    class_index,
)
from randsvm_dist.exceptions import NotFittedError, ParameterError, SchemaError
from randsvm_dist.numerics.kernels import (
    moments_variance,
    resolve_gamma,
    row_sq_norms,
    value_moments,
)
from randsvm_dist.numerics.multiclass import ovr_predict

DASK_HINT = ("the streaming learners take in-memory arrays; for Dask collections or Parquet "
             "data sets wrap the learner: randsvm_dist.distributed.streaming."
             "DaskStreamingClassifier(learner) (or use fit_streaming / "
             "randsvm_dist.distributed.predict)")


def is_dask_like(obj) -> bool:
    """Whether obj is a Dask collection (duck-typed: this package never imports Dask)."""
    return hasattr(obj, "__dask_graph__") and callable(obj.__dask_graph__)


def readonly_rows(X: np.ndarray) -> np.ndarray:
    """A read-only view of the dense rows X (no copy).

    The compiled passes only read their rows, and numba compiles one specialisation for
    writable and another for read-only arrays: handing them read-only views always, a
    read-only input (a memory map, a frozen array) runs the machine code a writable one
    compiled.

    Returns:
        a view of X with ``writeable`` False (X itself is unchanged).
    """
    view = X.view()
    view.flags.writeable = False
    return view


def unit_rows(X):
    """X with every row scaled to unit L2 norm (zero rows stay zero), float32.

    Args:
        X: float32/float64 ndarray or CSR.

    Returns:
        the scaled rows, same kind as X.
    """
    n = np.sqrt(row_sq_norms(X).astype(np.float64))
    inv = np.where(n > 0, 1.0 / np.maximum(n, 1e-30), 0.0)
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(inv.astype(np.float32)) @ X, dtype=np.float32)
    return np.ascontiguousarray(X * inv[:, None].astype(np.float32), dtype=np.float32)


def gamma_moments(X, normalize: bool = False) -> tuple[int, float, float]:
    """The moments of X's feature values gamma='scale' is resolved from.

    Args:
        X: rows (dense or CSR).
        normalize: scale rows to unit norm first (as learners with normalize=True see them).

    Returns:
        ``numerics.kernels.value_moments`` of the (scaled) rows: (values, sum, sum of squares).
    """
    if normalize and X.shape[0]:
        X = unit_rows(X)
    return value_moments(X)


def learner_gamma(gamma, n_features: int, moments=None) -> float:
    """THE resolution of a streaming learner's kernel width (every learner and
    :mod:`randsvm_dist.distributed.streaming` call this one function).

    Args:
        gamma: a number, 'scale' (1 / (n_features * variance of all feature values), as
            scikit-learn's SVC) or 'auto' (1 / n_features).
        n_features: feature count.
        moments: for 'scale', an iterable of :func:`gamma_moments` of the blocks holding
            the rows (one block in-process, every partition on Dask).

    Returns:
        gamma as a float > 0.

    Raises:
        ParameterError: bad gamma, or 'scale' without moments.
    """
    if isinstance(gamma, str) and gamma == "scale":
        if moments is None:
            raise ParameterError("gamma='scale' needs the data's moments")
        return resolve_gamma("scale", n_features=n_features,
                             x_var=moments_variance(list(moments)))
    return resolve_gamma(gamma, n_features=n_features)


def resolve_class_weight(class_weight, classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """One weight per class (aligned with ``classes``).

    Args:
        class_weight: None, dict {label: weight > 0} or 'balanced'.
        classes: sorted classes.
        y: the labels the 'balanced' rule counts (see the module docstring).

    Returns:
        float64 (n_classes,).

    Raises:
        ParameterError: unknown string, a label not among classes, a weight not >= 0.
    """
    out = np.ones(len(classes))
    if class_weight is None:
        return out
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ParameterError("class_weight must be None, a dict or 'balanced'; got "
                                 f"{class_weight!r}")
        counts = np.bincount(class_index(y, classes), minlength=len(classes)) if len(y) \
            else np.zeros(len(classes), dtype=np.int64)
        return balanced_class_weight(counts)
    if not isinstance(class_weight, dict):
        raise ParameterError("class_weight must be None, a dict or 'balanced'; got "
                             f"{type(class_weight).__name__}")
    for label, w in class_weight.items():
        idx = np.flatnonzero(classes == label)
        if not len(idx):
            raise ParameterError(f"class_weight has label {label!r}, which is not among "
                                 f"the classes {classes.tolist()}")
        try:
            wf = float(w)
        except (TypeError, ValueError):
            raise ParameterError(f"class_weight[{label!r}] must be a number; got {w!r}")\
                from None
        if not (np.isfinite(wf) and wf >= 0):
            raise ParameterError(f"class_weight[{label!r}] must be a number >= 0; got {w!r}")
        out[idx[0]] = wf
    return out


class StreamingClassifier(ClassifierMixin, BaseEstimator):
    """Base class of the one-pass learners (see the module docstring)."""

    def _new_binary(self, n_features: int, seed: int):  # pragma: no cover - abstract
        raise NotImplementedError

    def _start(self, X) -> None:
        """Hook run once before the first binary learner is made (X: the first batch,
        validated). Subclasses resolve data-dependent settings here."""

    # -- fitting ---------------------------------------------------------------------------
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn from one batch of rows (in order).

        Args:
            X: (n_rows, n_features) dense or scipy sparse.
            y: (n_rows,) labels.
            classes: all labels of the stream; required on the first call.
            sample_weight: None or (n_rows,) weights (rows of weight <= 0 are dropped).

        Returns:
            self

        Raises:
            SchemaError: bad X/y/sample_weight shape, unknown label, one class, wrong
                feature count.
            ParameterError: bad hyper-parameters, class_weight or a non-finite weight;
                a Dask collection (use ``distributed.streaming.DaskStreamingClassifier``).
        """
        if is_dask_like(X) or is_dask_like(y):
            raise ParameterError(DASK_HINT)
        first = not hasattr(self, "learners_")
        if first:
            if classes is None:
                raise SchemaError("classes= is required on the first call to partial_fit")
            classes = check_classes(classes, where="classes=")
        X = check_features(X, None if first else self.n_features_in_,
                           model=type(self).__name__)
        y = check_labels(y, X.shape[0])
        sw = check_sample_weight(sample_weight, X.shape[0])
        if first:
            cw = resolve_class_weight(getattr(self, "class_weight", None), classes,
                                      y[np.isin(y, classes)])
            self._start(X)
            self.classes_ = classes
            self.class_weight_ = cw
            self.n_features_in_ = X.shape[1]
            n_learners = 1 if len(self.classes_) == 2 else len(self.classes_)
            self.random_seed_ = resolve_seed(getattr(self, "random_state", None))
            self.learners_ = [self._new_binary(X.shape[1], derive_seed(self.random_seed_, k))
                              for k in range(n_learners)]
            self.n_seen_ = 0
        targets, idx = self._targets(y)
        w = self._row_weights(idx, sw)
        if w is not None:
            keep = w > 0
            if not keep.all():
                X = X[np.flatnonzero(keep)]
                targets = [t[keep] for t in targets]
                w = w[keep]
            if np.all(w == 1.0):
                w = None
        if X.shape[0]:
            for learner, t in zip(self.learners_, targets):
                learner.partial_fit(X, t, w)
            self.n_seen_ += X.shape[0]
        return self

    def _row_weights(self, idx: np.ndarray, sw: np.ndarray | None) -> np.ndarray | None:
        """sample_weight x class weight of each row (None: all 1)."""
        cw = getattr(self, "class_weight_", None)
        if cw is None or np.all(cw == 1.0):
            return sw
        w = cw[idx]
        return w if sw is None else w * sw

    def _targets(self, y: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """±1 targets per binary learner and each row's class index; SchemaError naming
        the first unknown label."""
        classes = self.classes_
        if len(classes) == 2:  # comparisons: cheaper than a search on long streams
            is_pos = y == classes[1]
            if (~is_pos & (y != classes[0])).any():
                class_index(y, classes)  # raises, naming the row
            return [is_pos * 2.0 - 1.0], is_pos.astype(np.intp)
        idx = class_index(y, classes)
        return [np.where(idx == k, 1.0, -1.0) for k in range(len(classes))], idx

    def fit(self, X, y, sample_weight=None):
        """Forget what was learnt and make one pass over (X, y) in row order.

        Args:
            X: (n_rows, n_features) dense or scipy sparse.
            y: (n_rows,) labels (at least two classes among the rows of weight > 0).
            sample_weight: None or (n_rows,) weights (see the module docstring).

        Returns:
            self

        Raises:
            SchemaError: bad X/y or fewer than two classes in y.
            ParameterError: every weight <= 0, a non-finite weight, bad parameters, or a
                Dask collection (use ``distributed.streaming.DaskStreamingClassifier``).
        """
        if is_dask_like(X) or is_dask_like(y):
            raise ParameterError(DASK_HINT)
        for attr in ("learners_", "classes_", "n_features_in_", "n_seen_", "random_seed_",
                     "class_weight_"):
            self.__dict__.pop(attr, None)
        X = check_features(X, min_rows=1)
        y_arr = check_labels(y, X.shape[0])
        sw = check_sample_weight(sample_weight, X.shape[0])
        live = y_arr if sw is None else y_arr[sw > 0]
        if sw is not None and not len(live):
            raise ParameterError("Invalid input - all samples have zero or negative weights")
        classes = check_classes(np.unique(live), where="y" if sw is None
                                else "the labels of the rows of positive weight")
        if sw is not None and len(live) < len(y_arr):
            y_arr = y_arr.copy()  # dropped rows may carry a label outside classes
            y_arr[sw <= 0] = classes[0]
        self.partial_fit(X, y_arr, classes=classes, sample_weight=sw)
        return self.compact()

    def compact(self) -> StreamingClassifier:
        """Drop the working state of the binary learners that prediction does not need
        (rebuilt if learning goes on; results are the same): ``fit``, ``merge`` and the
        distributed fit do it, so a fitted learner and its model file hold what prediction
        needs (a BlurredBallSVM no longer keeps its core-set kernel matrix).

        Returns:
            self
        """
        for learner in getattr(self, "learners_", []):
            if hasattr(learner, "compact"):
                learner.compact()
        return self

    # -- prediction ------------------------------------------------------------------------
    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "n_seen_", 0) > 0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_fitted(self):
        """THE "fitted?" rule of every streaming learner: fitted once a row of weight > 0
        was learnt (an empty first batch sets the classes up but fits nothing).

        Raises:
            NotFittedError: no row learnt yet.
        """
        if not hasattr(self, "learners_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet")
        if not getattr(self, "n_seen_", 0):
            raise NotFittedError(f"this {type(self).__name__} has learnt no row yet (its "
                                 "batches were empty or all their weights <= 0): call "
                                 "partial_fit with rows first")

    def _merge_settings(self) -> dict:
        """The settings two learners must share to be merged (name -> value; a value of
        None is not known yet and not compared). Subclasses add theirs (kernel, resolved
        gamma, degree, coef0, budget, ...); the classes and the feature count are checked
        by :meth:`merge` itself."""
        return {}

    def decision_function(self, X) -> np.ndarray:
        """Signed scores.

        Args:
            X: (n_rows, n_features) dense or scipy sparse.

        Returns:
            (n_rows,) for two classes (positive means classes_[1]), (n_rows, n_classes)
            one-vs-rest otherwise.

        Raises:
            NotFittedError, SchemaError (bad X), ParameterError (a Dask collection).
        """
        self._check_fitted()
        if is_dask_like(X):
            raise ParameterError(DASK_HINT)
        X = check_features(X, self.n_features_in_, model=type(self).__name__)
        scores = [learner.decision_function(X) for learner in self.learners_]
        return scores[0] if len(scores) == 1 else np.column_stack(scores)

    def predict(self, X) -> np.ndarray:
        """Predicted labels for the rows of X.

        Raises:
            NotFittedError, SchemaError (bad X), ParameterError (a Dask collection).
        """
        scores = self.decision_function(X)  # raises NotFittedError first
        return self.classes_[ovr_predict(scores)]

    def score(self, X, y, sample_weight=None) -> float:
        """(Weighted) accuracy on in-memory (X, y).

        Raises:
            NotFittedError, SchemaError (bad X), ParameterError (a Dask collection).
        """
        if is_dask_like(X) or is_dask_like(y):
            raise ParameterError(DASK_HINT)
        return super().score(X, y, sample_weight)

    @property
    def n_core_(self) -> int:
        """Points (or support vectors) kept, summed over the binary learners (0 before a
        row was learnt)."""
        if not hasattr(self, "learners_"):
            self._check_fitted()
        if not self.n_seen_:
            return 0
        return int(sum(learner.n_core for learner in self.learners_))

    # -- combination -----------------------------------------------------------------------
    def merge(self, other: StreamingClassifier) -> StreamingClassifier:
        """Combine two learners fitted on disjoint parts of one data set.

        A learner that has learnt no row yet (an empty partition) adds nothing: the result
        is a copy of the other one.

        Returns:
            a new learner (the inputs are unchanged).

        Raises:
            NotFittedError: either learner never saw a batch.
            SchemaError: different types, classes or feature counts.
            ParameterError: different settings (:func:`check_mergeable`).
        """
        check_mergeable(self, other)
        if not other.n_seen_ or not self.n_seen_:
            return copy.deepcopy(self if self.n_seen_ else other).compact()
        out = copy.copy(self)
        out.learners_ = [a.merge(b) for a, b in zip(self.learners_, other.learners_)]
        out.n_seen_ = self.n_seen_ + other.n_seen_
        return out.compact()


def _shown(v) -> str:
    return repr(float(v)) if isinstance(v, (float, np.floating)) else repr(v)


def _same_value(a, b) -> bool:
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        try:
            return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=0.0))
        except (TypeError, ValueError):
            return False
    return a == b


def check_mergeable(a: StreamingClassifier, b: StreamingClassifier) -> None:
    """THE merge-compatibility check of every streaming learner: same type, classes and
    feature count, and the same :meth:`StreamingClassifier._merge_settings` (kernel,
    resolved gamma, degree, coef0, budget, ...).

    Raises:
        NotFittedError: either learner never saw a batch.
        SchemaError: different types, classes or feature counts.
        ParameterError: a setting differs, named with both values (one line).
    """
    for est in (a, b):
        if not hasattr(est, "learners_"):
            raise NotFittedError(f"this {type(est).__name__} is not fitted yet")
    name = type(a).__name__
    if type(b) is not type(a):
        raise SchemaError(f"cannot merge {name} with {type(b).__name__}")
    if not np.array_equal(a.classes_, b.classes_):
        raise SchemaError(f"cannot merge {name} learners with classes {a.classes_.tolist()} "
                          f"and {b.classes_.tolist()}")
    if a.n_features_in_ != b.n_features_in_:
        raise SchemaError(f"cannot merge {name} learners with {a.n_features_in_} and "
                          f"{b.n_features_in_} features")
    mine, theirs = a._merge_settings(), b._merge_settings()
    for key, va in mine.items():
        vb = theirs.get(key)
        if va is None or vb is None or _same_value(va, vb):
            continue
        hint = ""
        if key == "gamma" and (a.get_params().get("gamma") == "scale"
                               or b.get_params().get("gamma") == "scale"):
            hint = ("; gamma='scale' was resolved from each learner's own first batch: pass "
                    "a number when the learners are fitted on different parts")
        raise ParameterError(f"cannot merge {name} learners with {key} {_shown(va)} and "
                             f"{_shown(vb)}{hint}")
