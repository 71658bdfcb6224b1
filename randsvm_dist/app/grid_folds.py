"""The grid search's folds and per-fold work on Dask: stratified seeded folds from global class
ranks, one (fold, C, gamma) point solved by LIBSVM on a gathered fold or by the RandSVM driver
on the fold's partitions, and :class:`FoldRun`, which runs a grid's points and logs progress."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import as_completed as futures_completed
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from randsvm_dist.app.grid_space import SCORINGS, Scoring
from randsvm_dist.engine.bounded_wait import gather, n_workers
from randsvm_dist.exact.sampling import row_keys, stream_id
from randsvm_dist.exceptions import ParameterError

log = logging.getLogger("randsvm_dist")

LIBSVM_MAX_ROWS = 50_000
PROGRESS_SECONDS = 2.0  # at most one progress line this often (and always the last one)


# -- folds ---------------------------------------------------------------------------------
def assign_folds(cls: np.ndarray, n_folds: int, random_state: int | None,
                 class_start: np.ndarray | None = None) -> np.ndarray:
    """Stratified fold of each row (see the module docstring), from global class ranks.

    Args:
        cls: class index of each row of a block of consecutive rows of the data set.
        n_folds: number of folds (>= 2).
        random_state: seed.
        class_start: per class, how many rows of that class come before this block
            (None: the block starts the data set).

    Returns:
        int32 fold of each row, in [0, n_folds).
    """
    cls = np.asarray(cls, dtype=np.int64)
    k = int(n_folds)
    n_classes = int(cls.max()) + 1 if len(cls) else 0
    start = (np.zeros(n_classes, np.int64) if class_start is None
             else np.asarray(class_start, np.int64))
    folds = np.empty(len(cls), np.int32)
    for c in range(n_classes):
        rows = np.flatnonzero(cls == c)
        if not len(rows):
            continue
        rank = start[c] + np.arange(len(rows))
        b0, b1 = rank[0] // k, rank[-1] // k + 1
        keys = row_keys(stream_id(random_state, 0xF01D, c), b0 * k, (b1 - b0) * k)
        perm = np.argsort(np.argsort(keys.reshape(-1, k), axis=1, kind="stable"), axis=1)
        folds[rows] = perm[rank // k - b0, rank % k]
    return folds


def _strata(part, n_classes: int) -> np.ndarray:
    """The stratum of each row: its class index, or 0 for all when there are no classes
    (regression: folds are not stratified)."""
    return part.y if n_classes > 1 else np.zeros(len(part.y), np.int64)


def _class_counts(part, n_classes: int) -> np.ndarray:
    return np.bincount(_strata(part, n_classes), minlength=n_classes)


def _partition_folds(part, n_folds: int, random_state, class_start) -> np.ndarray:
    return assign_folds(_strata(part, len(class_start)), n_folds, random_state, class_start)


def _fold_counts(folds: np.ndarray, n_folds: int) -> np.ndarray:
    return np.bincount(folds, minlength=n_folds)


def check_fold_count(counts: np.ndarray, n_folds: int) -> None:
    """Refuse more folds than rows of the largest stratum, as scikit-learn's StratifiedKFold
    does: with fewer, some fold would hold no row (its score undefined).

    Args:
        counts: rows of each stratum (each class; regression: one stratum, all rows).
        n_folds: the folds asked for.

    Raises:
        ParameterError: naming the folds, the largest stratum and the rows.
    """
    largest, total = int(np.max(counts, initial=0)), int(np.sum(counts))
    if n_folds > largest:
        of = "rows" if len(counts) == 1 else f"rows of the largest class ({total} rows in all)"
        raise ParameterError(f"n_folds={n_folds} (--folds) is more than the {largest} {of}: "
                             f"every fold needs rows; use at most {largest} folds")


def distributed_folds(client, parts, n_classes: int, n_folds: int, random_state):
    """Fold futures per partition (and per-partition fold sizes) for a PartitionSet."""
    counts = gather(client, [client.submit(_class_counts, f, n_classes, pure=False, retries=2)
                             for f in parts.futures], "the class counts of the folds")
    check_fold_count(np.sum(counts, axis=0), n_folds)
    starts = np.cumsum([np.zeros(n_classes, np.int64)] + counts[:-1], axis=0)
    folds = [client.submit(_partition_folds, f, n_folds, random_state, starts[i], pure=False,
                           retries=2) for i, f in enumerate(parts.futures)]
    sizes = np.array(gather(client, [client.submit(_fold_counts, f, n_folds, pure=False,
                                                   retries=2) for f in folds],
                            "the fold sizes"))
    return folds, sizes


# -- one point: LIBSVM on a gathered fold ----------------------------------------------------
def _fold_arrays(f: int, parts: list, folds: list) -> tuple:
    """The fold's training and held-out rows (float64 CSR, class labels) in row order."""
    Xs = [p.X if sp.issparse(p.X) else sp.csr_matrix(p.X) for p in parts]
    X = sp.vstack(Xs, format="csr", dtype=np.float64)
    y = np.concatenate([p.y for p in parts]).astype(np.float64)
    fold = np.concatenate(folds)
    train, test = fold != f, fold == f
    return X[train], y[train], X[test], y[test]


def libsvm_options(C: float, gamma: float, tol: float, cache_size: float,
                   svm_type: str = "c_svc", epsilon: float = 0.1) -> str:
    """LIBSVM's option string of one grid point (RBF kernel): C-SVC (``-s 0 -c C``),
    epsilon-SVR (``-s 3 -c C -p epsilon``) or one-class (``-s 2 -n nu``, ``C`` being nu)."""
    first = {"c_svc": f"-s 0 -c {C!r}", "epsilon_svr": f"-s 3 -c {C!r} -p {epsilon!r}",
             "one_class": f"-s 2 -n {C!r}"}[svm_type]
    return f"{first} -t 2 -g {gamma!r} -e {tol!r} -m {cache_size!r} -q"


def _libsvm_point(fold_data: tuple, C: float, gamma: float, tol: float,
                  cache_size: float, svm_type: str = "c_svc", epsilon: float = 0.1,
                  scoring: Scoring = SCORINGS["accuracy"],
                  normal=None) -> tuple[float, int, float]:
    from libsvm.svmutil import svm_parameter, svm_predict, svm_problem, svm_train

    t0 = time.perf_counter()
    Xtr, ytr, Xte, yte = fold_data
    model = svm_train(svm_problem(ytr, Xtr), svm_parameter(
        libsvm_options(C, gamma, tol, cache_size, svm_type, epsilon)))
    pred, _, dec = svm_predict(yte, Xte, model, "-q")
    out = np.asarray(dec, np.float64)[:, 0] if svm_type == "one_class" else np.asarray(pred)
    return (scoring.fold_value(yte, out, normal), len(yte), time.perf_counter() - t0)


# -- one point: RandSVM on the fold's partitions ----------------------------------------------
def _train_rows(part, folds: np.ndarray, f: int, offset: int):
    keep = folds != f
    return replace(part, X=part.X[keep], y=part.y[keep], offset=offset,
                   weight=None if part.weight is None else part.weight[keep])


def _held_out(part, folds: np.ndarray, f: int, model) -> tuple:
    """(held-out targets/labels, the model's outputs) of a partition: predictions in the
    coded labels (classification), predictions (regression) or decision values
    (one-class, labels coded)."""
    keep = folds == f
    if hasattr(model, "classes_"):
        pred = np.searchsorted(model.classes_, model.predict(part.X[keep])) \
            if keep.any() else np.empty(0)
        return part.y[keep], pred
    if hasattr(model, "offset_"):
        return part.y[keep], (model.decision_function(part.X[keep]) if keep.any()
                              else np.empty(0))
    return part.y[keep], model.predict(part.X[keep]) if keep.any() else np.empty(0)


# -- the search --------------------------------------------------------------------------------
@dataclass(frozen=True)
class FoldPoint:
    fold: int
    log2C: float
    log2gamma: float


class FoldRun:
    """One search's state on the cluster: partitions, folds, per-fold task sets.

    ``search`` is the fitting ``GridSearch``: its settings, scoring, the estimator it makes
    (``_make``) and its record of finished points (``_done``, ``_record``).
    """

    def __init__(self, search, client, parts, folds, fold_sizes, n_classes):
        self.s, self.client, self.parts = search, client, parts
        self.folds, self.fold_sizes, self.n_classes = folds, fold_sizes, n_classes
        self.k = int(search.n_folds)
        self.fold_data: dict = {}
        self.pairs: set = set()

    def _solver(self, f: int) -> str:
        if self.parts.weighted:  # libsvm-official has no per-row weights
            if self.s.solver == "libsvm":
                raise ParameterError("solver='libsvm' cannot use sample weights (a weight "
                                     "column): use solver='auto' or 'randsvm'")
            return "randsvm"
        if self.s.solver != "auto":
            return self.s.solver
        n_train = int(self.parts.n_rows - self.fold_sizes[:, f].sum())
        return "libsvm" if n_train <= int(self.s.libsvm_max_rows) else "randsvm"

    def evaluate(self, grid: list[tuple[float, float]]) -> None:
        """Evaluate every fold of every (log2C, log2gamma) not done yet; blocks until done."""
        from distributed import as_completed

        todo = [FoldPoint(f, c, g) for c, g in grid for f in range(self.k)
                if FoldPoint(f, c, g) not in self.s._done]
        self.pairs.update(grid)
        total, t0 = len(todo), time.perf_counter()
        if not total:
            return
        log.info("grid search: %d (fold, C, gamma) to run, %d already done", total,
                 len(grid) * self.k - total)
        small = [p for p in todo if self._solver(p.fold) == "libsvm"]
        large = [p for p in todo if self._solver(p.fold) == "randsvm"]
        futures = {self._submit_libsvm(p): p for p in small}
        progress = _Progress(self, total, t0)
        with ThreadPoolExecutor(max_workers=max(1, n_workers(self.client))) as pool:
            pending = {pool.submit(self._randsvm_point, p): p for p in large}
            if futures:  # distributed's as_completed([]) looks for a default client
                # its loop given: as_completed would otherwise look for a default client
                for fut, result in as_completed(futures, with_results=True,
                                                loop=self.client.loop):
                    progress.finished(futures[fut], (*result, "libsvm"))
            for fut in futures_completed(pending):  # each recorded as soon as it ends
                progress.finished(pending[fut], (*fut.result(), "randsvm"))

    def _submit_libsvm(self, p: FoldPoint):
        """Submit one point to LIBSVM on its gathered fold (see ``_libsvm_point``).

        Args:
            p: the (fold, log2C, log2gamma) to solve.

        Returns:
            the Dask future of its (fold value, held-out rows, seconds).
        """
        return self.client.submit(_libsvm_point, self._fold_data(p.fold), 2.0 ** p.log2C,
                                  2.0 ** p.log2gamma, float(self.s.tol),
                                  float(self.s.cache_size), self.s.svm_type_,
                                  float(self.s.epsilon), self.s.scoring_, self.s._normal,
                                  pure=False, retries=2)

    def best_point(self) -> dict | None:
        """The point of :meth:`points` with the best mean score (NaN the worst; ties to the
        smaller C (nu), then the smaller gamma); None before any point has every fold."""
        pts = self.points()
        if not pts:
            return None
        sign = 1.0 if self.s.scoring_.greater_is_better else -1.0
        return max(pts, key=lambda q: (sign * np.nan_to_num(q["mean_score"], nan=-np.inf * sign),
                                       -q["log2C"], -q["log2gamma"]))

    def _fold_data(self, f: int):
        if f not in self.fold_data:
            self.fold_data[f] = self.client.submit(_fold_arrays, f, self.parts.futures,
                                                   self.folds, pure=False, retries=2)
        return self.fold_data[f]

    def _randsvm_point(self, p: FoldPoint) -> tuple[float, int, float]:
        from randsvm_dist.engine.partitions import PartitionSet

        t0 = time.perf_counter()
        c = self.client
        train_sizes = self.parts.sizes - self.fold_sizes[:, p.fold]
        offsets = np.concatenate([[0], np.cumsum(train_sizes)[:-1]]).astype(np.int64)
        futures = [c.submit(_train_rows, part, fo, p.fold, int(offsets[i]), pure=False,
                            retries=2)
                   for i, (part, fo) in enumerate(zip(self.parts.futures, self.folds))]
        train = PartitionSet(futures, offsets, train_sizes, self.parts.n_features,
                             self.parts.is_sparse, coding=self.parts.coding,
                             weighted=self.parts.weighted)
        est = self.s._make(2.0 ** p.log2C, 2.0 ** p.log2gamma)
        est._fit_partitions(c, train, self.parts.coding.classes)
        got = gather(c, [c.submit(_held_out, part, fo, p.fold, est, pure=False, retries=2)
                         for part, fo in zip(self.parts.futures, self.folds)],
                     f"the held-out rows of fold {p.fold}")
        y = np.concatenate([g[0] for g in got])
        out = np.concatenate([g[1] for g in got])
        return (self.s.scoring_.fold_value(y, out, self.s._normal), len(y),
                time.perf_counter() - t0)

    def points(self) -> list[dict]:
        """Per (C or nu, gamma) of the grids run so far with every fold done: the CV
        summary."""
        sc = self.s.scoring_
        out = []
        by_pair: dict = {}
        for p, r in self.s._done.items():
            by_pair.setdefault((p.log2C, p.log2gamma), {})[p.fold] = r
        for (c, g), folds in sorted(by_pair.items()):
            if len(folds) < self.k or (c, g) not in self.pairs:
                continue
            values = [folds[f][0] for f in range(self.k)]
            ns = [folds[f][1] for f in range(self.k)]
            fold_score = np.array([sc.fold_score(v, n) for v, n in zip(values, ns)])
            point = {"log2C": c, "log2gamma": g, self.s.axis_: 2.0 ** c, "gamma": 2.0 ** g,
                     "scoring": sc.name, "mean_score": sc.pooled(values, ns),
                     "std_score": float(fold_score.std()),
                     "fold_score": fold_score.tolist(), "n_folds": self.k,
                     "seconds": sum(folds[f][2] for f in range(self.k)),
                     "solver": "/".join(sorted({folds[f][3] for f in range(self.k)}))}
            if sc.name == "accuracy":
                point.update(mean_accuracy=point["mean_score"],
                             std_accuracy=point["std_score"], fold_accuracy=point["fold_score"])
            out.append(point)
        return out


class _Progress:
    """The record and progress log of one :meth:`FoldRun.evaluate` call: every finished
    point is recorded in the search; a progress line is logged at most every
    PROGRESS_SECONDS, and always for the last point."""

    def __init__(self, run: FoldRun, total: int, t0: float):
        self.run, self.total, self.t0 = run, total, t0
        self.done, self.last_line = 0, -np.inf

    def finished(self, p: FoldPoint, result: tuple) -> None:
        """Record point ``p``'s ``result`` (fold value, held-out rows, seconds, solver) in
        the search and log it (progress and the best point so far, when due)."""
        s = self.run.s
        s._record(p, result)
        self.done += 1
        elapsed = time.perf_counter() - self.t0
        log.debug("fold %d %s=2^%g gamma=2^%g: %s %.4f", p.fold, s.axis_, p.log2C,
                  p.log2gamma, s.scoring_.name, s.scoring_.fold_score(result[0], result[1]))
        if self.done < self.total and elapsed - self.last_line < PROGRESS_SECONDS:
            return
        self.last_line = elapsed
        best = self.run.best_point()
        log.info("grid %d/%d (fold, %s, gamma) done  best so far %s  ETA %.0f s", self.done,
                 self.total, s.axis_, f"{s.axis_}=2^{best['log2C']:g} "
                 f"gamma=2^{best['log2gamma']:g} {s.scoring_.name} "
                 f"{best['mean_score']:.4f}" if best else "-",
                 elapsed / self.done * (self.total - self.done))
