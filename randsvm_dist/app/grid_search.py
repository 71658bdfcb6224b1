"""Cross-validated (C, gamma) grid search for the RBF C-SVM as a Dask job, as in LIBSVM's guide.

The guide ("A Practical Guide to Support Vector Classification", Hsu, Chang, Lin) scales the
features, cross-validates an RBF SVM on the exponential grid C = 2^-5, 2^-3, ..., 2^15 and
gamma = 2^3, 2^1, ..., 2^-15 (its ``grid.py``), refines around the best point with a finer
step, and trains on all rows with the best pair. :class:`GridSearch` does each step on a
Dask cluster:

* **Folds** are stratified and seeded, and computed from the global row index: within each
  class, rows in data-set order form blocks of ``n_folds`` consecutive rows, and each block
  sends one row to every fold by a random permutation drawn from per-row keys
  (``exact.sampling.row_keys`` of the class's stream). Every fold gets the same share of every
  class (to one row), and the folds are the same whatever the partitioning.
* **Every (fold, C, gamma) is its own task set.** When the training part of a fold has at
  most ``libsvm_max_rows`` rows, one task per fold gathers the fold's rows on a worker and
  one task per (C, gamma) runs LIBSVM (``svm_train`` + ``svm_predict``, exactly what
  LIBSVM's own ``-v`` does on those folds) there; all of them are submitted at once and run
  concurrently. Larger folds are trained by the RandSVM driver on the fold's partitions
  (several drivers at once, one per worker), and the held-out rows are scored on the
  workers. The default switch-over, 50,000 training rows, is where RandSVM stopped losing
  to LIBSVM in ``benchmarks/README.md`` (ijcnn1 49,990 rows: 1.0x; a9a 32,561: 0.5x;
  checkerboard 100,000: 1.8x).
* **No warm starts.** libsvm-official has no way to start a solve from given alphas, and
  the RandSVM driver takes no initial working set, so neighbouring grid points share none.
* **Progress** (points done / total, best so far, ETA) goes to the ``randsvm_dist`` logger.
* **Every SVM type, one search.** The estimator class (``RandSVMClassifier``,
  ``RandSVMRegressor``, ``RandSVMOneClass``) and the scoring are the only things that
  change: C-SVC is scored by accuracy (``-s 0``), epsilon-SVR by RMSE or R^2 (``-s 3``, a
  fixed ``epsilon``; folds are not stratified), the one-class SVM by the ROC AUC of the
  held-out rows with the normal label as positives (``-s 2``; its first axis is nu, not C;
  it trains on every row of the training folds, labels ignored, and needs labelled normal
  and outlier rows to be scored; folds are stratified by label).
* **Nothing finished is lost.** Each (fold, C, gamma) result is appended to the fold CSV
  (``results=``) as soon as it arrives; a rerun with the same file skips what it holds,
  and a worker that dies only costs the tasks it was running (Dask reruns them).
"""


from __future__ import annotations

import csv
import logging
import os
import time

import numpy as np

from randsvm_dist.app.grid_cache import KEY_COLUMN, search_key
from randsvm_dist.app.grid_folds import LIBSVM_MAX_ROWS, FoldPoint, FoldRun, distributed_folds
from randsvm_dist.app.grid_space import (
    GUIDE_FINE_STEP,
    GUIDE_LOG2C,
    GUIDE_LOG2GAMMA,
    ONE_CLASS_LOG2NU,
    SCORINGS,
    TASK_SCORINGS,
    exponent_range,
    fine_grid,
)
from randsvm_dist.core.seeds import resolve_seed
from randsvm_dist.exceptions import DataFormatError, ParameterError

log = logging.getLogger("randsvm_dist")

FOLD_COLUMNS = ("fold", "log2C", "log2gamma", "value", "n", "seconds", "solver")
RESULT_COLUMNS = FOLD_COLUMNS + ("n_folds", "random_state", KEY_COLUMN)


class GridSearch:
    """Cross-validated grid search of an RBF SVM over (C, gamma), or (nu, gamma) for the
    one-class SVM, on Dask.

    Args:
        log2C, log2gamma: grid.py's (begin, end, step) of base-2 exponents; default the
            guide's coarse grid C = 2^-5..2^15 step 2^2, gamma = 2^3..2^-15 step 2^-2.
        estimator: the RandSVM estimator class searched (``RandSVMClassifier``, the
            default; ``RandSVMRegressor``; ``RandSVMOneClass``), or its LIBSVM name
            ('c_svc', 'epsilon_svr', 'one_class').
        scoring: None (accuracy; rmse for regression; auc for one-class), or 'accuracy',
            'rmse', 'r2', 'auc' (the ones of the estimator's task).
        epsilon: epsilon-SVR's tube (fixed during the search).
        log2nu: one-class: the (begin, end, step) exponents of nu (its first axis in place
            of C; exponents above 0 are dropped, nu <= 1).
        normal_label: one-class: the label of normal rows (default 1, as
            ``distributed.predict.normal_label_of``); the others are outliers.
        n_folds: cross-validation folds (stratified, seeded, layout-independent).
        refine: after the coarse grid, search best +- one coarse step at ``fine_step``.
        fine_step: exponent step of the fine grid (the guide: 0.25).
        scale: None, 'minmax', 'standard' or a FeatureScaler, learnt on all rows before the
            search (the guide's order) and kept by the refit model.
        libsvm_max_rows: folds whose training part has at most this many rows are solved by
            LIBSVM directly, larger ones by the RandSVM driver (``solver`` overrides).
            Weighted data (a Dataset with a weight column) always takes the RandSVM
            driver: libsvm-official has no per-row weights.
        solver: 'auto', 'libsvm' or 'randsvm'.
        tol, cache_size: LIBSVM's -e and -m.
        gap_tol, max_iter: the RandSVM driver's stop rules for large folds (and the refit).
        random_state: seed of the folds (and of RandSVM's draws).
        client: None (default client, else a LocalCluster), an address or a Client.
        results: CSV of every finished (fold, C, gamma); read back on a rerun to skip them.

    Attributes after ``fit``: ``best_params_`` ({'C', 'gamma'}; one-class {'nu',
    'gamma'}), ``best_score_`` (the pooled CV score), ``scoring_``, ``points_`` (one dict
    per point: log2C (log2 nu for one-class), log2gamma, C (or nu), gamma, scoring,
    mean_score, std_score, fold_score, seconds, solver; classification also
    mean_accuracy, std_accuracy, fold_accuracy), ``n_rows_``, ``search_seconds_``,
    ``best_estimator_`` (after ``refit``). The results CSV's ``log2C`` column holds log2 nu
    for one-class.
    """

    def __init__(self, log2C=GUIDE_LOG2C, log2gamma=GUIDE_LOG2GAMMA, n_folds: int = 5,
                 refine: bool = True, fine_step: float = GUIDE_FINE_STEP, scale=None,
                 libsvm_max_rows: int = LIBSVM_MAX_ROWS, solver: str = "auto",
                 tol: float = 1e-3, cache_size: float = 200.0, gap_tol: float = 1e-3,
                 max_iter: int = 50, random_state: int | None = 0, client=None,
                 results: str | os.PathLike | None = None, estimator=None,
                 scoring: str | None = None, epsilon: float = 0.1,
                 log2nu=ONE_CLASS_LOG2NU, normal_label=None):
        self.estimator = estimator
        self.scoring = scoring
        self.epsilon = epsilon
        self.log2nu = tuple(log2nu)
        self.normal_label = normal_label
        self.log2C = tuple(log2C)
        self.log2gamma = tuple(log2gamma)
        self.n_folds = n_folds
        self.refine = refine
        self.fine_step = fine_step
        self.scale = scale
        self.libsvm_max_rows = libsvm_max_rows
        self.solver = solver
        self.tol = tol
        self.cache_size = cache_size
        self.gap_tol = gap_tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.client = client
        self.results = results

    # -- public -------------------------------------------------------------------------
    def fit(self, data, y=None) -> GridSearch:
        """Run the coarse grid (and the fine one when ``refine``) on ``data``.

        Args:
            data: a Dataset, a Parquet path/URL, or X (then y).

        Returns:
            self

        Raises:
            ParameterError: bad grid, folds or solver; SchemaError: bad data.
        """
        from randsvm_dist.engine.client import dask_client

        self._check_settings()
        self._setup()
        first = self.log2nu if self.task_ == "one_class" else self.log2C
        cs = self._first_axis(exponent_range(*first))
        gs = exponent_range(*self.log2gamma)
        t0 = time.perf_counter()
        self.random_seed_ = resolve_seed(self.random_state)
        self.search_key_ = search_key(self, data, y) if self.results is not None else None
        self._done = self._read_results()
        with dask_client(self.client) as client:
            parts, classes = self._load(client, data, y)
            run = self._start_run(client, parts, classes)
            run.evaluate([(c, g) for c in cs for g in gs])
            if self.refine:
                fc, fg = fine_grid(self._best(run), (first[2], self.log2gamma[2]),
                                   float(self.fine_step))
                run.evaluate([(c, g) for c in self._first_axis(fc) for g in fg])
        self._set_best(run, t0)
        return self

    def _check_settings(self) -> None:
        """Raises ParameterError for fewer than 2 folds or an unknown solver."""
        if int(self.n_folds) < 2:
            raise ParameterError(f"n_folds must be >= 2; got {self.n_folds!r}")
        if self.solver not in ("auto", "libsvm", "randsvm"):
            raise ParameterError(f"solver must be 'auto', 'libsvm' or 'randsvm'; got "
                                 f"{self.solver!r}")

    def _load(self, client, data, y) -> tuple:
        """The search's partitions (scaled when ``scale``) and coded classes; sets
        ``_normal`` and ``scaler_``.

        Raises:
            ParameterError: a one-class search on data without normal and outlier labels.
        """
        from randsvm_dist.engine.inputs import load_partitions
        from randsvm_dist.exceptions import SchemaError

        try:
            parts, classes = load_partitions(
                client, data, y, cache=True,
                task="regression" if self.task_ == "regression" else "classification")
        except SchemaError as e:
            if self.task_ != "one_class":
                raise
            raise ParameterError(f"a one-class grid search is scored by the ROC AUC of "
                                 f"held-out normal and outlier rows, so it needs labels "
                                 f"of both: {e}") from None
        self._normal = self._normal_index(classes)
        self.scaler_ = None
        if self.scale is not None:
            from randsvm_dist.distributed.scaling import make_scaler

            self.scaler_ = make_scaler(self.scale).fit_partitions(client, parts)
            parts = self.scaler_.transform_partitions(client, parts)
        return parts, classes

    def _start_run(self, client, parts, classes) -> FoldRun:
        """The folds of ``parts`` on the cluster and the run that evaluates grids on them;
        sets ``classes_``, ``n_rows_`` and ``fold_sizes_``."""
        self.classes_, self.n_rows_ = classes, parts.n_rows
        n_strata = 1 if classes is None else len(classes)
        folds, fold_sizes = distributed_folds(client, parts, n_strata,
                                              int(self.n_folds), self.random_seed_)
        self.fold_sizes_ = fold_sizes.sum(axis=0)
        return FoldRun(self, client, parts, folds, fold_sizes, n_strata)

    def _set_best(self, run: FoldRun, t0: float) -> None:
        """``points_``, ``best_params_``, ``best_score_`` and ``search_seconds_`` of a
        finished run (started at ``t0``)."""
        self.points_ = run.points()
        best = self._best(run)
        self.best_params_ = {self.axis_: 2.0 ** best[0], "gamma": 2.0 ** best[1]}
        self.best_score_ = next(p["mean_score"] for p in self.points_
                                if (p["log2C"], p["log2gamma"]) == best)
        self.search_seconds_ = time.perf_counter() - t0
        log.info("grid search: best %s=2^%g gamma=2^%g, CV %s %.4f, %d points in %.1f s",
                 self.axis_, best[0], best[1], self.scoring_.name, self.best_score_,
                 len(self.points_), self.search_seconds_)

    def _setup(self) -> None:
        """The estimator class, task, scoring and first axis of this search.

        Raises:
            ParameterError: an unknown estimator, or a scoring of another task.
        """
        from randsvm_dist.estimators import ESTIMATORS

        cls = ESTIMATORS.get(self.estimator, self.estimator) \
            if isinstance(self.estimator, str) else (self.estimator or ESTIMATORS["c_svc"])
        if cls not in ESTIMATORS.values():
            raise ParameterError(f"estimator must be one of {', '.join(ESTIMATORS)} or its "
                                 f"class; got {self.estimator!r}")
        self.estimator_class_, self.task_ = cls, cls._task
        scoring = self.scoring or TASK_SCORINGS[self.task_][0]
        if scoring not in TASK_SCORINGS[self.task_]:
            raise ParameterError(f"scoring {scoring!r} does not apply to {cls.__name__}; "
                                 f"choose {' or '.join(TASK_SCORINGS[self.task_])}")
        self.scoring_ = SCORINGS[scoring]
        self.axis_ = "nu" if self.task_ == "one_class" else "C"
        self.svm_type_ = cls._svm_type

    def _first_axis(self, exponents: list[float]) -> list[float]:
        """The first axis' exponents (one-class: nu = 2^e <= 1 only)."""
        if self.task_ != "one_class":
            return exponents
        kept = [e for e in exponents if e <= 0]
        if not kept:
            raise ParameterError(f"log2nu {self.log2nu}: nu = 2^e must be <= 1 (e <= 0)")
        return kept

    def _normal_index(self, classes):
        """One-class: the coded label of normal rows (see ``normal_label_of``), else None.

        Raises:
            ParameterError: no normal label among the labels.
        """
        if self.task_ != "one_class":
            return None
        from randsvm_dist.distributed.predict import normal_label_of

        normal = normal_label_of(classes, self.normal_label)
        if isinstance(normal, str) and classes.dtype.kind in "iuf":
            try:
                normal = float(normal)
            except ValueError:
                pass
        hit = np.flatnonzero(classes == normal) if normal is not None else []
        if not len(hit):
            raise ParameterError(f"the normal label {normal!r} is not among the labels "
                                 f"{classes.tolist()[:10]}; name it with normal_label= "
                                 "(--normal-label)")
        return int(hit[0])

    def _make(self, first: float, gamma: float, **params):
        """The searched estimator at (C or nu, gamma) with this search's fixed settings."""
        kw = {"kernel": "rbf", self.axis_: first, "gamma": gamma, "k": None,
              "gap_tol": self.gap_tol, "tol": self.tol, "max_iter": self.max_iter,
              "cache_size": self.cache_size, "random_state": self.random_seed_}
        if self.task_ == "regression":
            kw["epsilon"] = float(self.epsilon)
        kw.update(params)
        return self.estimator_class_(**kw)

    def refit(self, data, y=None, model_path: str | os.PathLike | None = None, **params):
        """Train the searched estimator with the best (C or nu, gamma) on all rows (and save
        it).

        Args:
            params: more parameters of the final model (e.g. probability=True,
                class_weight, multi_class for a classifier), which the search's scores do
                not depend on.

        Returns:
            the fitted estimator (also ``best_estimator_``).
        """
        if not hasattr(self, "estimator_class_"):
            self._setup()
        est = self._make(self.best_params_[self.axis_], self.best_params_["gamma"],
                         client=self.client,
                         scale=self.scaler_ if self.scale is not None else None, **params)
        est.fit(data, y)
        if model_path is not None:
            est.save(model_path)
        self.best_estimator_ = est
        return est

    def write_points(self, path: str | os.PathLike) -> None:
        """Write every (C, gamma) (one-class: (nu, gamma)) with its mean/std CV score as
        CSV (classification: also mean/std accuracy)."""
        cols = ["log2C", "log2gamma", self.axis_, "gamma", "scoring", "mean_score",
                "std_score", "n_folds", "seconds", "solver"]
        if self.task_ == "classification":
            cols[2:4] = ["C", "gamma"]
            cols[4:7] = ["mean_accuracy", "std_accuracy"]
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(self.points_)

    def plot(self, path: str | os.PathLike) -> None:
        """A contour plot of CV accuracy over lg(C), lg(gamma), like grid.py's."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        c = np.array([p["log2C"] for p in self.points_])
        g = np.array([p["log2gamma"] for p in self.points_])
        pct = self.scoring_.name in ("accuracy", "auc", "r2")
        a = (100 if pct else 1) * np.array([p["mean_score"] for p in self.points_])
        if not self.scoring_.greater_is_better:
            a = -a   # contours around the best (largest) value
        fig, ax = plt.subplots(figsize=(6, 5))
        if len(np.unique(c)) > 1 and len(np.unique(g)) > 1:
            # grid.py's contours: every 0.5 point from 3 points below the best up (RMSE:
            # ten levels over the spread)
            span = 3.0 if pct else float(np.ptp(a))
            levels = np.arange(np.round(a.max(), 1) - span, a.max(),
                               0.5 if pct else max(span / 10, 1e-12))
            levels = levels[levels > a.min()]
            if len(levels) > 1:
                cs = ax.tricontour(c, g, a, levels=levels, linewidths=0.8, cmap="viridis")
                ax.clabel(cs, fontsize=7, fmt="%.1f")
        ax.scatter(c, g, s=4, c="grey")
        bc, bg = np.log2(self.best_params_[self.axis_]), np.log2(self.best_params_["gamma"])
        ax.plot([bc], [bg], "r*", ms=12)
        ax.set_xlabel(f"lg({self.axis_})")
        ax.set_ylabel("lg(gamma)")
        name = self.scoring_.name if self.scoring_.name != "r2" else "R^2"
        best = (f"{100 * self.best_score_:.2f}%" if pct else f"{self.best_score_:.4g}")
        ax.set_title(f"CV {name}{' (%)' if pct else ''}: best {self.axis_}=2^{bc:g}, "
                     f"gamma=2^{bg:g}, {best}", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)

    # -- internals ------------------------------------------------------------------------
    def _best(self, run: FoldRun) -> tuple[float, float]:
        top = run.best_point()
        return top["log2C"], top["log2gamma"]

    def _seed(self) -> int:
        """The seed of this search (``random_state`` resolved once; see ``seeds``)."""
        if getattr(self, "random_seed_", None) is None:
            self.random_seed_ = resolve_seed(self.random_state)
        return self.random_seed_

    def _read_results(self) -> dict:
        done: dict = {}
        if self.results is None or not os.path.exists(self.results):
            return done
        with open(self.results, newline="") as fh:
            reader = csv.DictReader(fh)
            if tuple(reader.fieldnames or ()) != RESULT_COLUMNS:
                raise DataFormatError(f"{self.results}: not a grid-search results file "
                                      f"(columns {reader.fieldnames})")
            for row in reader:
                if int(row["n_folds"]) != int(self.n_folds) or \
                        row["random_state"] != str(self._seed()):
                    raise DataFormatError(
                        f"{self.results}: written with n_folds={row['n_folds']}, "
                        f"random_state={row['random_state']}; this search has "
                        f"n_folds={self.n_folds}, random_state={self._seed()}: use "
                        "another results file")
                key = getattr(self, "search_key_", None)
                if key is not None and row[KEY_COLUMN] != key:
                    raise DataFormatError(
                        f"{self.results}: the results of another search (other data, folds "
                        "or settings); use another results file")
                p = FoldPoint(int(row["fold"]), float(row["log2C"]), float(row["log2gamma"]))
                done[p] = (float(row["value"]), int(row["n"]), float(row["seconds"]),
                           row["solver"])
        log.info("grid search: %d finished (fold, C, gamma) read from %s", len(done),
                 self.results)
        return done

    def _record(self, p: FoldPoint, result: tuple) -> None:
        self._done[p] = result
        if self.results is None:
            return
        new = not os.path.exists(self.results)
        with open(self.results, "a", newline="") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(RESULT_COLUMNS)
            w.writerow([p.fold, p.log2C, p.log2gamma, *result, self.n_folds,
                        self._seed(), self.search_key_])
