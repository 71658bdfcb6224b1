"""Feature scaling learnt over a whole data set on the workers, as LIBSVM's ``svm-scale`` does.

Every scaling here is, per feature j, svm-scale's affine map

    x' = lower + (upper - lower) * (x - min_j) / (max_j - min_j)

with one ``(lower, upper)`` for all features and a ``(min_j, max_j)`` per feature; a feature
with ``min_j == max_j`` is constant and maps to 0 (svm-scale drops it from its output, which
is the same for sparse data). Both methods are stored this way, so the range file that
``svm-scale -s`` writes and ``svm-scale -r`` reads holds any fitted scaler exactly:

* ``method="minmax"``: ``min_j``/``max_j`` are the data's (implicit zeros of sparse rows
  included, as svm-scale counts them); the range is ``[lower, upper]`` (default [-1, 1]).
* ``method="standard"``: (x - mean_j) / std_j, written as ``lower=-1, upper=1`` and
  ``min_j = mean_j - std_j``, ``max_j = mean_j + std_j``.

Sparse data keeps zeros at zero. svm-scale does so only with ``-l 0`` and for features whose
minimum is 0; here, for sparse input, ``lower`` must be 0 and every feature is mapped by
``x / max_j |x|`` (minmax: ``min_j = 0``, ``max_j = max |x|``; a feature with negative values
then lands in [-1, 1], the others in [0, 1]) or by ``x / std_j`` (standard: no centring).

Statistics are computed per partition on the workers (count, min, max, mean and the sum of
squared deviations, in float64) and combined on the client with Chan et al.'s pairwise
update, so they equal the whole-array statistics whatever the partitioning.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin

from randsvm_dist.core.validation import check_features
from randsvm_dist.data.range_file import read_range_file, write_range_file
from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.exceptions import DataFormatError, NotFittedError, ParameterError, SchemaError

log = logging.getLogger("randsvm_dist")

METHODS = ("minmax", "standard")


@dataclass
class FeatureStats:
    """Per-feature statistics of a block of rows (implicit zeros of sparse rows included).

    Attributes:
        n: number of rows.
        min, max, mean, m2: per feature, float64; m2 is the sum of squared deviations
            from the mean.
    """

    n: int
    min: np.ndarray
    max: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @property
    def var(self) -> np.ndarray:
        """Population variance per feature."""
        return self.m2 / max(self.n, 1)

    def combine(self, other: FeatureStats) -> FeatureStats:
        """Statistics of the union of both blocks (Chan, Golub, LeVeque's pairwise update)."""
        if self.n == 0:
            return other
        if other.n == 0:
            return self
        n = self.n + other.n
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.n / n)
        m2 = self.m2 + other.m2 + delta * delta * (self.n * other.n / n)
        return FeatureStats(n, np.minimum(self.min, other.min), np.maximum(self.max, other.max),
                            mean, m2)


def feature_stats(X) -> FeatureStats:
    """Statistics of the rows of X (float32/64 ndarray or CSR).

    Returns:
        FeatureStats; for no rows, min=+inf and max=-inf.
    """
    n, d = X.shape
    if n == 0:
        return FeatureStats(0, np.full(d, np.inf), np.full(d, -np.inf), np.zeros(d),
                            np.zeros(d))
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        lo = np.asarray(X.min(axis=0).todense(), dtype=np.float64).ravel()
        hi = np.asarray(X.max(axis=0).todense(), dtype=np.float64).ravel()
        s = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
        ss = np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel()
        mean = s / n
        m2 = np.maximum(ss - n * mean * mean, 0.0)
        return FeatureStats(n, lo, hi, mean, m2)
    X = np.asarray(X)
    mean = X.mean(axis=0, dtype=np.float64)
    dev = X - mean
    return FeatureStats(n, X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64),
                        mean, np.einsum("ij,ij->j", dev, dev))


def combine_stats(stats: list[FeatureStats]) -> FeatureStats:
    """Statistics of the union of the blocks, in the given order."""
    out = stats[0]
    for s in stats[1:]:
        out = out.combine(s)
    return out


def _partition_stats(part) -> FeatureStats:
    return feature_stats(part.X)


def _dataset_partition_stats(ds, i: int) -> FeatureStats:
    return feature_stats(ds.read_partition(i)[0])


class FeatureScaler(TransformerMixin, BaseEstimator):
    """svm-scale's min-max scaling, or standardisation, usable in a scikit-learn Pipeline.

    Args:
        method: 'minmax' (svm-scale) or 'standard' ((x - mean) / std).
        lower, upper: minmax target range (svm-scale's -l/-u). ``lower=None``: -1 for dense
            data, 0 for sparse data (which must keep zeros at zero, so only 0 is accepted).
        client: where ``fit`` on a Parquet data set runs (see ``engine.client.dask_client``).

    Fitted attributes: ``lower_``, ``upper_``, ``feature_min_``, ``feature_max_`` (svm-scale's
    per-feature parameters; see the module docstring), ``scale_``, ``offset_`` (x' = x *
    scale_ + offset_), ``data_min_``, ``data_max_``, ``mean_``, ``var_``,
    ``n_samples_seen_``, ``n_features_in_``, ``sparse_`` (fitted on sparse data: zeros stay
    zero).
    """

    def __init__(self, method: str = "minmax", lower: float | None = None,
                 upper: float = 1.0, client=None):
        self.method = method
        self.lower = lower
        self.upper = upper
        self.client = client

    def __getstate__(self):
        state = self.__dict__.copy()
        if state.get("client") is not None and not isinstance(state["client"], str):
            state["client"] = None
        return state

    # -- fitting ---------------------------------------------------------------------
    def fit(self, data, y=None):
        """Learn the scaling from arrays (in-process) or a Parquet data set (on the workers).

        Args:
            data: (n, d) array or CSR, a Dataset, or a Parquet path/URL.
            y: ignored (for Pipeline).

        Returns:
            self

        Raises:
            ParameterError: bad method/range; lower != 0 on sparse data.
            SchemaError: bad X.
        """
        from randsvm_dist.engine.inputs import open_dataset

        ds = open_dataset(data)
        if ds is None:
            X = check_features(data)
            return self.fit_stats(feature_stats(X), sp.issparse(X))
        from randsvm_dist.engine.client import dask_client

        with dask_client(self.client) as client:
            stats = gather(client, [client.submit(_dataset_partition_stats, ds, i, pure=False,
                                                  retries=2) for i in range(ds.n_partitions)],
                           "the scaling statistics",
                           [f"partition {i}" for i in range(ds.n_partitions)])
        return self.fit_stats(combine_stats(stats), ds.is_sparse)

    def fit_partitions(self, client, parts) -> FeatureScaler:
        """Learn the scaling from a ``PartitionSet``: its partitions on the workers, or,
        re-read, each read by the task that takes its statistics."""
        if parts.futures is None:
            futures = [client.submit(_dataset_partition_stats, parts.dataset, i, pure=False,
                                     retries=2) for i in range(parts.n_partitions)]
        else:
            futures = [client.submit(_partition_stats, f, pure=False, retries=2)
                       for f in parts.futures]
        stats = gather(client, futures, "the scaling statistics")
        return self.fit_stats(combine_stats(stats), parts.is_sparse)

    def fit_stats(self, stats: FeatureStats, sparse: bool) -> FeatureScaler:
        """Set the fitted scaling from combined statistics (see the module docstring)."""
        if self.method not in METHODS:
            raise ParameterError(f"method must be one of {METHODS}; got {self.method!r}")
        lower = (0.0 if sparse else -1.0) if self.lower is None else float(self.lower)
        upper = float(self.upper)
        if not upper > lower:
            raise ParameterError(f"the scaling range needs lower < upper; got lower={lower}, "
                                 f"upper={upper}")
        if stats.n == 0:
            raise SchemaError("cannot learn a scaling from a data set of 0 rows")
        std = np.sqrt(stats.var)
        if self.method == "minmax":
            if sparse:
                if lower != 0.0:
                    raise ParameterError(
                        f"sparse data keeps zeros at zero, which needs lower=0 (svm-scale "
                        f"-l 0); got lower={lower}. Convert to the dense layout to scale "
                        "to [-1, 1]")
                fmin = np.zeros_like(stats.max)
                fmax = np.maximum(np.abs(stats.min), np.abs(stats.max))
            else:
                fmin, fmax = stats.min.copy(), stats.max.copy()
        elif sparse:
            lower, upper = 0.0, 1.0
            fmin, fmax = np.zeros_like(std), std
        else:
            lower, upper = -1.0, 1.0
            fmin, fmax = stats.mean - std, stats.mean + std
        if sparse:
            log.info("scaling sparse data: zeros stay zero (every feature divided by its %s)",
                     "largest |value|" if self.method == "minmax" else "standard deviation")
        self.lower_, self.upper_ = lower, upper
        self.feature_min_, self.feature_max_ = fmin, fmax
        self.data_min_, self.data_max_ = stats.min, stats.max
        self.mean_, self.var_ = stats.mean, stats.var
        self.n_samples_seen_ = int(stats.n)
        self.sparse_ = bool(sparse)
        self._set_affine()
        return self

    def _set_affine(self) -> None:
        self.n_features_in_ = len(self.feature_min_)
        width = self.feature_max_ - self.feature_min_
        varying = width != 0
        scale = np.zeros(len(width))
        scale[varying] = (self.upper_ - self.lower_) / width[varying]
        offset = np.where(varying, self.lower_ - self.feature_min_ * scale, 0.0)
        self.scale_, self.offset_ = scale, offset

    # -- applying --------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "scale_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet")

    def transform(self, X):
        """Scale the rows of X (float32 result). CSR stays CSR with zeros kept at zero when
        the scaling keeps zeros; a scaling that moves zeros (fitted on dense data with
        lower != 0, as svm-scale's default -l -1) makes every scaled row dense, so sparse
        rows come back as a dense array, as svm-scale writes them (the model was trained on
        dense rows of as many features).

        Raises:
            NotFittedError; SchemaError (wrong feature count, NaN).
        """
        self._check_fitted()
        X = check_features(X, self.n_features_in_)
        if sp.issparse(X) and np.any(self.offset_ != 0):
            X = X.toarray()
        if sp.issparse(X):
            out = sp.csr_matrix(X @ sp.diags(self.scale_.astype(np.float32)), dtype=np.float32)
            out.eliminate_zeros()
            out.sort_indices()
            return out
        return (X * self.scale_ + self.offset_).astype(np.float32)

    def transform_partitions(self, client, parts):
        """A PartitionSet of the scaled partitions (new futures, same rows and offsets);
        re-read partitions are scaled after each read (``PartitionSet.transform``)."""
        from dataclasses import replace
        from functools import partial

        from randsvm_dist.engine.client import put

        if parts.futures is None:
            return replace(parts, transform=partial(_scale_partition, self))
        me = put(client, self)
        futures = [client.submit(_scale_partition, me, f, pure=False, retries=2)
                   for f in parts.futures]
        return replace(parts, futures=futures)

    def transform_dataset(self, data, dst: str | os.PathLike, *, overwrite: bool = False,
                          client=None):
        """Write the scaled copy of a Parquet data set (same partitions and labels).

        Each partition is read, scaled and written by a task on the workers (``dst`` must be
        reachable from them). Returns the new Dataset.

        Raises:
            SchemaError: the data set's feature count differs from the scaler's.
            DataFormatError: ``dst`` exists and not overwrite.
        """
        from randsvm_dist.data.writer import PartitionWriter
        from randsvm_dist.engine.client import dask_client, put
        from randsvm_dist.engine.inputs import open_dataset

        self._check_fitted()
        ds = open_dataset(data)
        if ds.n_features != self.n_features_in_:
            raise SchemaError(f"{ds} has {ds.n_features} features; the scaling has "
                              f"{self.n_features_in_}")
        with PartitionWriter(dst, overwrite=overwrite) as w, \
                dask_client(client if client is not None else self.client) as c:
            me = put(c, self)
            paths = [w.out.path(f"part-{i:05d}.parquet") for i in range(ds.n_partitions)]
            gather(c, [c.submit(_scale_dataset_partition, me, ds, i, paths[i], w.filesystem,
                                pure=False, retries=2) for i in range(ds.n_partitions)],
                   "the scaled partitions", [f"partition {i}" for i in range(ds.n_partitions)])
            w.paths = paths
            return w.close()

    # -- files -----------------------------------------------------------------------
    def save_range(self, path: str | os.PathLike) -> None:
        """Write the scaling as an svm-scale range file (``svm-scale -r`` applies it)."""
        self._check_fitted()
        write_range_file(path, self.lower_, self.upper_, self.feature_min_, self.feature_max_)

    @classmethod
    def load_range(cls, path: str | os.PathLike, n_features: int | None = None
                   ) -> FeatureScaler:
        """A fitted scaler from an svm-scale range file (see ``read_range_file``)."""
        lower, upper, fmin, fmax = read_range_file(path, n_features)
        return cls.from_parameters(lower, upper, fmin, fmax)

    @classmethod
    def from_parameters(cls, lower: float, upper: float, feature_min, feature_max,
                        method: str = "minmax") -> FeatureScaler:
        """A fitted scaler from svm-scale's parameters (statistics other than these unset)."""
        est = cls(method=method, lower=lower, upper=upper)
        est.lower_, est.upper_ = float(lower), float(upper)
        est.feature_min_ = np.asarray(feature_min, dtype=np.float64)
        est.feature_max_ = np.asarray(feature_max, dtype=np.float64)
        est._set_affine()
        est.sparse_ = bool(est.lower_ == 0.0 and np.all(est.offset_ == 0))
        return est

    def to_dict(self) -> dict:
        """JSON-able description of the fitted scaling (for a saved model's metadata)."""
        self._check_fitted()
        return {"method": self.method, "lower": self.lower_, "upper": self.upper_,
                "feature_min": self.feature_min_.tolist(),
                "feature_max": self.feature_max_.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> FeatureScaler:
        """Inverse of ``to_dict``.

        Raises:
            DataFormatError: a missing or malformed entry.
        """
        try:
            return cls.from_parameters(float(d["lower"]), float(d["upper"]),
                                       [float(v) for v in d["feature_min"]],
                                       [float(v) for v in d["feature_max"]],
                                       method=str(d.get("method", "minmax")))
        except (KeyError, TypeError, ValueError) as e:
            raise DataFormatError(f"malformed scaling entry in a model file: {e!r}") from None


def make_scaler(scale) -> FeatureScaler:
    """A new unfitted FeatureScaler from 'minmax', 'standard' or a FeatureScaler's params.

    Raises:
        ParameterError: anything else.
    """
    if isinstance(scale, FeatureScaler):
        return FeatureScaler(**{**scale.get_params(), "client": None})
    if scale in METHODS:
        return FeatureScaler(method=scale)
    raise ParameterError(f"scale must be None, one of {METHODS} or a FeatureScaler; "
                         f"got {scale!r}")


def _scale_partition(scaler: FeatureScaler, part):
    from dataclasses import replace

    return replace(part, X=scaler.transform(part.X))


def _scale_dataset_partition(scaler: FeatureScaler, ds, i: int, path: str, filesystem) -> int:
    from randsvm_dist.data.writer import partition_table, write_table

    X, y = ds.read_partition(i)
    write_table(partition_table(scaler.transform(X), y, n_features=ds.n_features,
                                label_column=ds.label_column), path, filesystem=filesystem)
    return X.shape[0]
