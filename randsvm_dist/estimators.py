"""scikit-learn compatible classifiers: ``RandSVMClassifier`` (RandSVM-1 on Dask)."""

from __future__ import annotations

import logging
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from randsvm_dist.engine.client import dask_client
from randsvm_dist.engine.inputs import apply_to_dask, dask_accuracy, is_dask_collection
from randsvm_dist.exact.bounds import support_bound
from randsvm_dist.exact.driver import Problem, RunConfig, run_randsvm
from randsvm_dist.exceptions import NotFittedError, ParameterError
from randsvm_dist.kernels import KERNELS, Kernel, decision_values, resolve_gamma
from randsvm_dist.seeds import resolve_seed
from randsvm_dist.solvers.libsvm_adapter import SolverParams
from randsvm_dist.validation import check_features, check_gamma, check_positive

log = logging.getLogger("randsvm_dist")


def _log_iteration(record: dict) -> None:
    log.info(
        "iter %2d problem %d: sample %6d  SV %6d  violators %8d (%.4f)  dual %.6g  "
        "gap %.2e  solve %.1fs scan %.1fs  total %.1fs%s",
        record["iteration"], record["problem"], record["sample_size"], record["n_support"],
        record["n_violators"], record["violator_fraction"], record["dual_objective"],
        record["relative_gap"], record["solve_seconds"], record["scan_seconds"],
        record["seconds"],
        f"  stop: {record['stop_reason']}" if record["stop_reason"] else "",
    )


class RandSVMClassifier(ClassifierMixin, BaseEstimator):
    """Exact kernel C-SVM for data sets of millions of rows: RandSVM-1 on Dask, LIBSVM solves.

    Args:
        kernel: 'linear', 'poly', 'rbf' or 'sigmoid' (LIBSVM's meanings).
        C: box constraint (> 0).
        gamma: kernel coefficient: a number, 'scale' (1 / (n_features * X.var())) or 'auto'
            (1 / n_features).
        degree, coef0: poly/sigmoid parameters.
        class_weight: None, 'balanced' or {label: weight}; C of a class is C * weight.
        k: the paper's support-set bound, an option: stop when a solve has k or more
            support vectors ('auto': the paper's estimate from epsilon and delta, see
            ``randsvm.bounds``). None (the default) drops it: the fit runs to the certified
            gap. A stop at k is not certified and warns.
        sample_size: r, rows of the first uniform sample (and the least a later working set
            is filled to). 'auto' is 2 x the paper's k estimate.
        epsilon, delta, separable: parameters of the k estimate.
        max_iter: most solve/scan iterations per binary problem.
        tol: LIBSVM's tolerance of the first solve (its -e); also the margin slack of a
            violator (y f(x) < 1 - tol). Later solves tighten it by 10x whenever the
            working set's own gap, which LIBSVM's tolerance leaves, keeps the certified gap
            above gap_tol (``history_`` records the tol of every solve).
        violator_tol: stop when at most this fraction of rows are violators (0: off). Not
            certified: warns.
        gap_tol: the default stop: (primal - dual) / primal <= gap_tol, the primal objective
            taken over all rows, the dual that of the working set. By weak duality this
            certifies that the model's objective is within that relative distance of the
            optimum of the whole data set. 0: run until no row violates the margin.
        seed: rows that join the first sample (see ``randsvm.seeding``): None, 'bsgd' or
            'ramp' (that streaming learner with this C and gamma, trained per partition on
            the workers and tree-merged: Parquet input only), an unfitted streaming learner
            (trained the same way), or a fitted model (a RandSVMClassifier fitted on these
            rows or on their first rows, e.g. with another C or gamma: its support vectors'
            rows; a streaming model: the rows inside its margin). A seed changes the speed,
            never the result: the certificate comes from scans of all rows.
        route: 'auto' (measured rule, see ``randsvm.driver``: a direct LIBSVM solve of all
            rows when sampling cannot pay, else sampling), 'sample' or 'direct'.
        cache: keep the partitions in worker memory (True), re-read them from Parquet on
            every pass (False: data larger than the workers' memory), or 'auto' (cache when
            the data takes at most half of the workers' memory limit).
        cache_size: LIBSVM's kernel cache in MB per solve.
        random_state: seed of every random choice (same value, same model, whatever the
            partitioning or the number of workers); None draws a fresh seed at each fit,
            recorded as ``random_seed_``.
        client: None (the default Dask client, else an embedded LocalCluster), a scheduler
            address, or a ``distributed.Client``. Never saved or pickled with the model.
        n_partitions: chunks for array input (default 2 per worker).
        scale: None, 'minmax' (svm-scale's [-1, 1]; [0, 1] keeping zeros for sparse data),
            'standard', or a ``preprocessing.FeatureScaler``: learnt on the training rows on
            the workers, applied before training and by predict/evaluate, saved with the
            model (and as an svm-scale range file ``<model>.range``).

    Fitted attributes: ``classes_``, ``n_features_in_``, ``support_`` (global row
    indices), ``support_vectors_``, ``dual_coef_`` (n_problems, n_SV), ``intercept_``,
    ``n_support_`` (per class), ``history_``, ``n_iter_``, ``stop_reasons_``, ``optimal_``
    (|V| = 0 reached for every problem: the model is optimal for the whole data set),
    ``relative_gap_`` (the largest certified relative primal-dual gap over the binary
    problems), ``certified_`` (relative_gap_ <= gap_tol for every problem), ``seed_info_``,
    ``gamma_``, ``k_``, ``sample_size_``, ``fit_time_``, ``scaler_`` (None or the fitted
    ``FeatureScaler``).
    """

    def __init__(self, kernel: str = "rbf", C: float = 1.0, gamma="scale", degree: int = 3,
                 coef0: float = 0.0, class_weight=None, k=None, sample_size="auto",
                 epsilon: float = 0.2, delta: float = 0.9, separable: bool = False,
                 max_iter: int = 50, tol: float = 1e-3, violator_tol: float = 0.0,
                 gap_tol: float = 1e-3, cache_size: float = 200.0,
                 random_state: int | None = None, client=None,
                 n_partitions: int | None = None, scale=None, seed=None,
                 route: str = "auto", cache="auto"):
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.class_weight = class_weight
        self.k = k
        self.sample_size = sample_size
        self.epsilon = epsilon
        self.delta = delta
        self.separable = separable
        self.max_iter = max_iter
        self.tol = tol
        self.violator_tol = violator_tol
        self.gap_tol = gap_tol
        self.cache_size = cache_size
        self.random_state = random_state
        self.client = client
        self.n_partitions = n_partitions
        self.scale = scale
        self.seed = seed
        self.route = route
        self.cache = cache

    # -- pickling: the client never travels with the model -----------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        if state.get("client") is not None and not isinstance(state["client"], str):
            state["client"] = None
        return state

    # -- validation ------------------------------------------------------------------------
    def _check_params(self) -> None:
        if self.kernel not in KERNELS:
            raise ParameterError(f"kernel must be one of {KERNELS}; got {self.kernel!r}")
        check_positive(self.C, "C")
        check_positive(self.tol, "tol")
        check_positive(self.cache_size, "cache_size")
        for name in ("violator_tol", "gap_tol"):
            if not (0.0 <= float(getattr(self, name)) < 1.0):
                raise ParameterError(f"{name} must be in [0, 1); got {getattr(self, name)!r}")
        if int(self.max_iter) < 1:
            raise ParameterError(f"max_iter must be >= 1; got {self.max_iter!r}")
        for name in ("k", "sample_size"):
            v = getattr(self, name)
            if name == "k" and v is None:
                continue
            if v != "auto" and (not isinstance(v, (int, np.integer)) or v < 1):
                raise ParameterError(f"{name} must be 'auto' or a positive integer; got {v!r}")
        if self.route not in ("auto", "sample", "direct"):
            raise ParameterError(f"route must be 'auto', 'sample' or 'direct'; got "
                                 f"{self.route!r}")
        if self.cache not in ("auto", True, False):
            raise ParameterError(f"cache must be 'auto', True or False; got {self.cache!r}")
        check_gamma(self.gamma)

    def _class_weights(self, classes: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
        cw = self.class_weight
        if cw is None:
            return np.ones(len(classes))
        if cw == "balanced":
            if counts is None:
                raise ParameterError("class_weight='balanced' needs the class counts")
            return counts.sum() / (len(classes) * np.maximum(counts, 1))
        if not isinstance(cw, dict):
            raise ParameterError(f"class_weight must be None, 'balanced' or a dict; got {cw!r}")
        w = np.ones(len(classes))
        for label, weight in cw.items():
            hit = np.flatnonzero(classes == label)
            if not len(hit):
                raise ParameterError(f"class_weight names label {label!r}, not among the "
                                     f"classes {classes.tolist()}")
            w[hit[0]] = check_positive(weight, f"class_weight[{label!r}]")
        return w

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, data, y=None, *, dataset_kwargs: dict | None = None,
            checkpoint: str | None = None, resume: bool = False):
        """Train on a Dataset, a Parquet path/URL, or arrays (X, y).

        Args:
            data: Dataset, Parquet path/URL, or X (dense, scipy sparse or dask).
            y: labels when data is X.
            dataset_kwargs: options of ``Dataset.open`` for a path/URL (label_column,
                feature_columns, n_features).
            checkpoint: a directory (path or URL) where the driver's state is written
                after every iteration (see ``randsvm_dist.checkpoint``).
            resume: go on from the state in ``checkpoint`` if there is one (same data and
                settings, random_state included); the model is the uninterrupted run's.

        Returns:
            self

        Raises:
            ParameterError: an invalid parameter.
            SchemaError: one class, bad X/y, y with a Dataset.
            ClusterError: the cluster cannot be reached.
        """
        from randsvm_dist.engine.inputs import (
            class_counts,
            feature_variance,
            load_partitions,
            open_dataset,
        )
        from randsvm_dist.exact.seeding import seed_rows

        self._check_params()
        t0 = time.perf_counter()
        self.random_seed_ = resolve_seed(self.random_state)
        rs = self.random_seed_
        if dataset_kwargs:
            data = open_dataset(data, **dataset_kwargs)
        with dask_client(self.client) as client:
            cache = True if self.scale is not None else self.cache
            parts, classes = load_partitions(client, data, y, self.n_partitions, cache)
            self.scaler_ = None
            if self.scale is not None:
                from randsvm_dist.preprocessing import make_scaler

                self.scaler_ = make_scaler(self.scale).fit_partitions(client, parts)
                parts = self.scaler_.transform_partitions(client, parts)
            ds = open_dataset(data) if y is None else None
            counts = class_counts(client, data, y, classes)
            x_var = (feature_variance(client, parts)
                     if self.gamma == "scale" and self.kernel != "linear" else None)
            gamma = (resolve_gamma(self.gamma, n_features=parts.n_features, x_var=x_var)
                     if self.kernel != "linear" else 1.0)
            kernel = Kernel(self.kernel, gamma, int(self.degree), float(self.coef0))
            weights = self._class_weights(classes, counts)
            n = parts.n_rows
            k_paper = support_bound(n, self.epsilon, self.delta, self.separable)
            k = k_paper if self.k == "auto" else self.k
            r = 2 * k_paper if self.sample_size == "auto" else int(self.sample_size)
            positives = [1] if len(classes) == 2 else list(range(len(classes)))
            problems = []
            for pos in positives:
                w_neg = weights[0] if len(classes) == 2 else 1.0
                solver = SolverParams(float(self.C), kernel, float(weights[pos]), float(w_neg),
                                      float(self.tol), float(self.cache_size))
                problems.append(Problem(pos, solver))
            seeds, self.seed_info_ = None, None
            if self.seed is not None:
                seeds, self.seed_info_ = seed_rows(
                    client, parts, self.seed, classes, positives, min(r, n), float(self.C),
                    gamma, rs, ds if self.scaler_ is None else None)
                log.info("seed %s: %s rows in %.1f s", self.seed_info_["seed"],
                         self.seed_info_["seed_rows"], self.seed_info_["seed_seconds"])
            cfg = RunConfig(k=k, sample_size=r, max_iter=int(self.max_iter),
                            violator_tol=float(self.violator_tol), gap_tol=float(self.gap_tol),
                            margin_tol=float(self.tol), random_state=rs, seed_rows=seeds,
                            route=self.route)
            log.info("RandSVM: %d rows, %d features, %d partitions (%s), %d problem(s), "
                     "k=%s, r=%d, gap_tol=%g", n, parts.n_features, parts.n_partitions,
                     "cached" if parts.futures is not None else "re-read each pass",
                     len(problems), k, r, self.gap_tol)
            ckpt = None
            if checkpoint is not None:
                from randsvm_dist.checkpoint import Checkpoint, run_fingerprint

                ckpt = Checkpoint(checkpoint, run_fingerprint(cfg, problems, parts, classes))
            history = run_randsvm(client, parts, problems, cfg, progress=_log_iteration,
                                  checkpoint=ckpt.save if ckpt else None,
                                  resume=ckpt.load() if ckpt and resume else None)
        if self.seed_info_ is not None:
            for h in history:
                if h["iteration"] == 1:
                    h.update(self.seed_info_)
        self._set_fitted(problems, classes, kernel, parts.n_features, parts.is_sparse)
        self.history_ = history
        self.n_iter_ = max(h["iteration"] for h in history)
        self.stop_reasons_ = [p.stop_reason for p in problems]
        self.optimal_ = all(p.stop_reason == "optimal" for p in problems)
        self.relative_gap_ = float(max(p.relative_gap for p in problems))
        self.certified_ = bool(self.gap_tol > 0 and self.relative_gap_ <= self.gap_tol)
        self.k_, self.sample_size_, self.gamma_ = k, min(r, n), gamma
        self.fit_time_ = time.perf_counter() - t0
        self._warn_uncertified()
        return self

    def _warn_uncertified(self) -> None:
        """ConvergenceWarning when the fit stopped without its certificate."""
        if self.certified_ or (self.gap_tol == 0 and self.optimal_):
            return
        reasons = sorted(set(self.stop_reasons_))
        warnings.warn(
            f"RandSVM stopped ({', '.join(reasons)}) at a relative primal-dual gap of "
            f"{self.relative_gap_:.3g}, above gap_tol={self.gap_tol:g}: the model is not "
            "certified to be that close to the optimum of all rows. Raise max_iter, or "
            "drop k / violator_tol.", ConvergenceWarning, stacklevel=3)

    def _set_fitted(self, problems: list[Problem], classes: np.ndarray, kernel: Kernel,
                    n_features: int, sparse: bool) -> None:
        rows = np.concatenate([p.sv_rows for p in problems])
        union, first = np.unique(rows, return_index=True)
        blocks = [p.sv_X for p in problems if p.sv_X is not None and p.sv_X.shape[0]]
        if blocks:
            stacked = sp.vstack(blocks, format="csr") if sparse else np.vstack(blocks)
            sv = stacked[first]
        else:
            sv = (sp.csr_matrix((0, n_features), dtype=np.float32) if sparse
                  else np.zeros((0, n_features), np.float32))
        coef = np.zeros((len(problems), len(union)))
        for j, p in enumerate(problems):
            coef[j, np.searchsorted(union, p.sv_rows)] = p.dual_coef
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.kernel_ = kernel
        self.support_ = union
        self.support_vectors_ = sv
        self.dual_coef_ = coef
        self.intercept_ = np.array([p.intercept for p in problems])
        if len(problems) == 1:
            pos = (coef[0] > 0).sum()
            self.n_support_ = np.array([len(union) - pos, pos], dtype=np.int32)
        else:
            # a row's class is the problem in which it has a positive coefficient, if any
            owner = np.where((coef > 0).any(axis=0), np.argmax(coef > 0, axis=0), -1)
            self.n_support_ = np.array([(owner == c).sum() for c in range(len(classes))],
                                       dtype=np.int32)

    # -- prediction ------------------------------------------------------------------------
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "dual_coef_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _check_fitted(self) -> None:
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet")

    def decision_function(self, X) -> np.ndarray:
        """f(x) per row: (n,) for two classes (positive means classes_[1]), else (n, K).

        Raises:
            NotFittedError, SchemaError (wrong feature count, NaN).
        """
        self._check_fitted()
        if is_dask_collection(X):
            return apply_to_dask(self, "decision_function", X)
        X = check_features(X, self.n_features_in_, model=type(self).__name__)
        if getattr(self, "scaler_", None) is not None:
            X = self.scaler_.transform(X)
        f = decision_values(X, self.support_vectors_, self.dual_coef_.T, self.intercept_,
                            self.kernel_)
        return f[:, 0] if f.shape[1] == 1 else f

    def predict(self, X) -> np.ndarray:
        """Predicted labels of the rows of X (a lazy dask array for Dask input)."""
        if is_dask_collection(X):
            self._check_fitted()
            return apply_to_dask(self, "predict", X)
        f = self.decision_function(X)
        if f.ndim == 1:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on (X, y); Dask input is scored on the cluster, never gathered."""
        if is_dask_collection(X) and sample_weight is None:
            self._check_fitted()
            with dask_client(self.client) as client:
                return dask_accuracy(self, X, y, client)
        return super().score(X, y, sample_weight)

    def predict_dataset(self, data, out_dir, client=None, *, overwrite: bool = False) -> dict:
        """Predict a Parquet data set on the workers; see ``predict.predict_dataset``."""
        from randsvm_dist.distributed_predict import predict_dataset

        self._check_fitted()
        return predict_dataset(self, data, out_dir, client if client is not None
                               else self.client, overwrite=overwrite)

    def evaluate(self, data, client=None) -> dict:
        """Accuracy and confusion matrix on a Parquet data set, computed on the workers."""
        from randsvm_dist.distributed_predict import evaluate_dataset

        self._check_fitted()
        out = evaluate_dataset(self, data, client if client is not None else self.client)
        out["n_support"] = int(len(self.support_))
        return out

    # -- model files (see randsvm_dist.model_files) ------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Save as one LIBSVM model file that stock LIBSVM reads, with this package's
        allow-listed metadata in a trailer (see ``randsvm_dist.model_files``).

        A model trained with ``scale`` holds support vectors in the scaled space: its
        scaling is in the metadata and, for stock LIBSVM, in ``<path>.range`` (svm-scale's
        range file: ``svm-scale -r <path>.range`` prepares rows for ``svm-predict``).

        Raises:
            NotFittedError: not fitted.
        """
        from randsvm_dist.model_files import save_model

        save_model(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> RandSVMClassifier:
        """Load a model written by ``save`` (or a stock LIBSVM binary model file).

        Raises:
            FileNotFoundError, DataFormatError (truncated, corrupt or disallowed metadata).
        """
        from randsvm_dist.model_files import load_randsvm_model, read_bytes

        return load_randsvm_model(read_bytes(path), os.fspath(path))


def _maybe_dense(X):
    if sp.issparse(X) and X.shape[1] <= 4096 and X.nnz > 0.25 * X.shape[0] * X.shape[1]:
        return np.ascontiguousarray(X.toarray(), dtype=np.float32)
    return X
