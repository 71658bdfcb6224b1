"""Platt scaling for ``RandSVMClassifier(probability=True)`` on data on the workers.

LIBSVM fits each pair's sigmoid (probA, probB) on decision values from an internal 5-fold
cross-validation. Rows in the client's memory get exactly that
(``estimators.cross_val_probability``). Here, for partitions on the workers (Parquet, Dask
input, arrays too large for memory's route), the rows are split into 5 folds by their
random keys (``row_keys`` of the calibration stream: the same split for any partitioning
and any number of workers), and the five fold fits run **at once**, as the problems of one
run of the driver (``exact.driver.run_randsvm``):

- the partitions' labels are coded ``class + n_classes x fold`` (on the workers, the rows
  stay where they are), and each fold's problem is a ``exact.kinds.FoldCSVC``: the full
  fit's problem (its classes, class weights, C, kernel, gamma) on the rows outside the
  fold. One scan per iteration serves all five folds (every row against the union of
  the support vectors of the problems it belongs to), so an iteration's scan costs about
  one fit's scan, not five;
- each fold's problem starts from the full fit's solution: the full model's support
  vectors that lie outside the fold are its first working set and their alphas the warm
  solver's start (``solvers.warm_smo`` repairs the equality constraint the restriction
  breaks). How many iterations a fold's fit then takes grows with the share of support
  vectors it removed: a fifth can take many, a small hold-out few;
- every fold's fit is certified to ``gap_tol`` as the full fit is (its own gap), and the
  decision values of each fold's rows under its fold's model are computed where the rows
  are. Each pair's sigmoid is fitted by LIBSVM's ``sigmoid_train`` (``numerics.probability``)
  to all rows' held-out values.

``probability_method_`` records what was fitted: 'cv5', or 'holdout' when the data set has
more than ``CV_MAX_ROWS`` rows and the full fit's own record says the folds would cost
far more than one hold-out fit (``fold_cost_ratio`` above ``HOLDOUT_FACTOR``). The
hold-out is the rows whose key falls below its share (``holdout_share``: HOLDOUT_ROWS rows
and HOLDOUT_CLASS_ROWS of each class expected, at most a fifth): a fit without so few
rows starts nearer its optimum than a fold's, and its sigmoids are fitted on tens of
thousands of values. The final model is always the full fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from randsvm_dist.engine.bounded_wait import gather
from randsvm_dist.engine.client import put
from randsvm_dist.engine.partitions import Partition, PartitionSet, placed
from randsvm_dist.engine.row_totals import class_counts
from randsvm_dist.exact.cancellation import cancel_check
from randsvm_dist.exact.driver import run_randsvm
from randsvm_dist.exact.fit import log_iteration
from randsvm_dist.exact.kinds import FoldCSVC
from randsvm_dist.exact.sampling import keys_of, row_keys, stream_id
from randsvm_dist.exact.state import ProblemState, RunConfig, SupportModel
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.probability import sigmoid_train

N_FOLDS = 5
CV_MAX_ROWS = 200_000  # at most this many rows: always the 5 folds
HOLDOUT_FACTOR = 3.0   # above CV_MAX_ROWS: the hold-out when the folds cost > this x it
HOLDOUT_ROWS = 50_000  # rows a hold-out keeps at least (its share: at most one fold's)
HOLDOUT_CLASS_ROWS = 5_000  # and of each class at least (the smaller class: all it has)
CALIBRATION_STREAM = 0xCA11B
FOLD_RUN_STREAM = 0xF01D
MIN_FIRST_DRAW = 100   # rows of a fold fit's first uniform draw at least


@dataclass(frozen=True)
class Folds:
    """How the rows are split by their calibration keys (in [0, 1), the same for any
    partitioning): 'cv5', five equal folds, each fitted on the other four; or 'holdout',
    the rows with a key below ``share`` held out (fold 0) and one fit on the rest (fold
    1)."""

    method: str = "cv5"
    share: float = 1 / N_FOLDS

    @property
    def n_folds(self) -> int:
        """Folds the labels are coded with."""
        return N_FOLDS if self.method == "cv5" else 2

    @property
    def fitted(self) -> list[int]:
        """The folds whose rows are held out and fitted without (one problem set each)."""
        return list(range(N_FOLDS)) if self.method == "cv5" else [0]

    def ids(self, keys: np.ndarray) -> np.ndarray:
        """Each row's fold from its calibration key."""
        keys = np.asarray(keys)
        if self.method == "cv5":
            return np.minimum((keys * N_FOLDS).astype(np.int64), N_FOLDS - 1)
        return (keys >= self.share).astype(np.int64)


def holdout_share(counts: np.ndarray) -> float:
    """The hold-out's share of the rows: HOLDOUT_ROWS rows and HOLDOUT_CLASS_ROWS of each
    class (all of a smaller class) expected in it, at most one fold's (1 / N_FOLDS).

    Args:
        counts: rows of each class.
    """
    n = float(np.sum(counts))
    need = max([HOLDOUT_ROWS / n] + [min(HOLDOUT_CLASS_ROWS, c) / c for c in counts if c])
    return min(1.0 / N_FOLDS, need)


def fold_cost_ratio(history: list[dict] | None, share: float) -> float:
    """The folds' cost over the hold-out's, from the full fit's record.

    Both are started from the full fit's solution and both scan every row against about
    the full model's support vectors (the five folds share one scan per iteration), so a
    scan costs the same; what differs is how far each start is from its optimum. A fit
    without a fold of ``share`` of the rows re-solves and re-scans about as many times as
    the full fit's iterations needed to bring that share of its support vectors in, and
    each fold removes 1/N_FOLDS of them, the hold-out only ``share``. The folds also make
    N_FOLDS solves per iteration, the hold-out one.

    Args:
        history: the full fit's ``history_`` (one record per iteration and problem).
        share: the hold-out's share of the rows (``holdout_share``).

    Returns:
        The folds' predicted seconds over the hold-out's (1.0 without a record).
    """
    if not history:
        return 1.0
    n_sv = [0]
    seconds = []
    for it in sorted({h["iteration"] for h in history}):
        rows = [h for h in history if h["iteration"] == it]
        n_sv.append(sum(h["n_support"] for h in rows))
        seconds.append((sum(h["solve_seconds"] for h in rows), max(h["scan_seconds"]
                                                                   for h in rows)))

    def cost(removed: float, solves: int) -> float:
        # the last iterations, back to where the model held (1 - removed) of its SVs
        total = 0.0
        for i in range(len(seconds) - 1, -1, -1):
            total += seconds[i][1] + solves * seconds[i][0]
            if n_sv[i] <= (1.0 - removed) * n_sv[-1]:
                break
        return total

    held = cost(share, 1)
    return cost(1.0 / N_FOLDS, N_FOLDS) / held if held > 0 else 1.0


def choose_folds(n_rows: int, counts: np.ndarray, history: list[dict] | None = None,
                 method: str | None = None) -> Folds:
    """'cv5' (5 folds by row keys, fitted at once), or the hold-out above CV_MAX_ROWS rows
    when ``fold_cost_ratio`` exceeds HOLDOUT_FACTOR (or when ``method`` asks for it).

    Args:
        n_rows: the rows of the full fit.
        counts: rows of each class.
        history: the full fit's ``history_``.
        method: 'cv5' or 'holdout' to choose; None: by the cost.
    """
    share = holdout_share(counts)
    if method is None:
        method = ("cv5" if n_rows <= CV_MAX_ROWS
                  or fold_cost_ratio(history, share) <= HOLDOUT_FACTOR else "holdout")
    return Folds(method, share if method == "holdout" else 1 / N_FOLDS)


def fold_coded(part: Partition, stream: int, n_classes: int, folds: Folds) -> Partition:
    """The partition with its labels coded ``class + n_classes x fold`` (runs on a
    worker; the features are the same object)."""
    fold = folds.ids(row_keys(stream, part.offset, part.n_rows))
    return replace(part, y=(part.y.astype(np.int64) + n_classes * fold).astype(part.y.dtype))


@dataclass
class FoldCodedPartitions(PartitionSet):
    """A PartitionSet whose labels are fold-coded (``fold_coded``): cached partitions are
    coded once; re-read ones (``futures`` None) are coded after every read of ``base``."""

    base: PartitionSet | None = None
    stream: int = 0
    n_classes: int = 2
    folds: Folds = Folds()

    def partition(self, client, i: int, where: str | None = None):
        """A future of partition i, fold-coded."""
        if self.futures is not None:
            return self.futures[i]
        return client.submit(fold_coded, self.base.partition(client, i, where), self.stream,
                             self.n_classes, self.folds, pure=False, retries=2,
                             **placed(where))


def fold_coded_partitions(client, parts: PartitionSet, stream: int, n_classes: int,
                          folds: Folds) -> FoldCodedPartitions:
    """``parts`` with fold-coded labels (see ``FoldCodedPartitions``)."""
    futures = None if parts.futures is None else [
        client.submit(fold_coded, f, stream, n_classes, folds, pure=False, retries=2)
        for f in parts.futures]
    return FoldCodedPartitions(
        futures, parts.offsets, parts.sizes, parts.n_features, parts.is_sparse, None,
        parts.coding, parts.weighted, parts.n_collapsed, parts.n_collapsed_across,
        parts.exchanged, parts.source, base=parts, stream=stream, n_classes=n_classes,
        folds=folds)


def restricted(model: SupportModel, stream: int, folds: Folds, fold: int) -> SupportModel:
    """The full fit's model restricted to its support vectors outside ``fold``: a fold
    fit's first working set and warm start (alphas as they were; the warm solver restores
    the equality constraint)."""
    rows = np.asarray(model.rows, np.int64)
    if not len(rows):
        return SupportModel()
    keep = np.flatnonzero(folds.ids(keys_of(stream, rows)) != fold)
    keep = keep[np.argsort(rows[keep], kind="stable")]
    return SupportModel(rows[keep], model.X[keep], np.asarray(model.t)[keep],
                        np.asarray(model.weight)[keep], np.asarray(model.coef)[keep],
                        float(model.intercept))


@dataclass(frozen=True)
class FoldModel:
    """A fold's model of one problem: f(x) = coef . k(sv, x) + intercept, or a constant
    (``sv`` None: the fold's training rows hold one class, LIBSVM's +1 / -1 / 0)."""

    sv: object
    coef: np.ndarray
    intercept: float


def fit_sigmoids(client, parts: PartitionSet, classes, est, states: list | None = None,
                 *, method: str | None = None, concurrent: bool = True
                 ) -> tuple[np.ndarray, np.ndarray, str]:
    """(probA, probB) per pair in LIBSVM's order and orientation, from held-out rows.

    Args:
        client: distributed.Client.
        parts: the partitions the full fit ran on (scaled as it was).
        classes: the sorted classes.
        est: the fitted classifier (its parameters are reused; one-vs-one or binary).
        states: the full run's final problem states (the folds' warm start; None: cold).
        method: 'cv5' or 'holdout' (None: ``choose_folds`` by the full fit's record).
        concurrent: the folds as the problems of one run (False: one run per fold, the
            same problems; for tests).

    Returns:
        (prob_a, prob_b, method), each array (n_pairs,).

    Raises:
        ParameterError: a one-vs-rest model (LIBSVM's probabilities are one-vs-one), or a
            pair without held-out rows of both classes.
    """
    if len(classes) > 2 and est.problems_[0][1] < 0:
        raise ParameterError("probability=True needs multi_class='ovo' (LIBSVM's pairwise "
                             "coupling); got multi_class='ovr'")
    if states is None:  # no full run to start from: cold fold fits of the same problems
        from randsvm_dist.engine.row_totals import WorkerTotals
        from randsvm_dist.estimators.base import HARD_MARGIN_C
        from randsvm_dist.solvers.params import SolverParams

        C = float(est.C)
        states = est._problems(WorkerTotals(client, parts), classes, SolverParams(
            HARD_MARGIN_C if np.isinf(C) else C, est.kernel_, tol=float(est.tol),
            cache_size=float(est.cache_size), backend=est.solver))
    k = len(classes)
    folds = choose_folds(parts.n_rows, class_counts(client, parts, k),
                         getattr(est, "history_", None), method)
    stream = stream_id(est.random_seed_, CALIBRATION_STREAM)
    coded = fold_coded_partitions(client, parts, stream, k, folds)
    counts = class_counts(client, coded, k * folds.n_folds).reshape(folds.n_folds, k)
    problems, constants = _fold_problems(est, states, folds, counts, stream)
    models = _fold_models(client, coded, est, problems, constants, concurrent)
    got = gather(client, [client.submit(_held_out_values, f, stream, folds,
                                        put(client, models), states[0].solver.kernel,
                                        pure=False, retries=2)
                          for f in parts.all(client)],
                 "the held-out decision values", parts.names())
    dec = np.concatenate([g[0] for g in got])
    y = np.concatenate([g[1] for g in got])
    w = np.concatenate([g[2] for g in got])
    if k == 2:
        dec = -dec  # LIBSVM's pair (0, 1) is positive towards class 0
    prob_a, prob_b = [], []
    for p, (i, j) in enumerate(_pairs(k)):
        rows = ((y == i) | (y == j)) & (w > 0)
        if not ((y[rows] == i).any() and (y[rows] == j).any()):
            first, second = np.asarray(classes)[[i, j]].tolist()
            raise ParameterError(f"probability=True: the held-out rows lack class {first!r} "
                                 f"or {second!r}; too few rows to calibrate")
        a, b = sigmoid_train(dec[rows, p], np.where(y[rows] == i, 1.0, -1.0), w[rows])
        prob_a.append(a)
        prob_b.append(b)
    return np.array(prob_a), np.array(prob_b), folds.method


def _fold_problems(est, states: list[ProblemState], folds: Folds, counts: np.ndarray,
                   stream: int) -> tuple[dict, dict]:
    """The fold fits' problems, keyed (fold, problem): each full problem on the rows
    outside the fold, started from the full model's support vectors there; and the
    constants of folds whose training rows hold one class of a problem."""
    problems, constants = {}, {}
    k = counts.shape[1]
    for f in folds.fitted:
        train = counts.sum(axis=0) - counts[f]
        for j, s in enumerate(states):
            kd = s.kind
            neg = [c for c in range(k) if c != kd.positive] if kd.negative is None \
                else [kd.negative]
            pos, n_neg = int(train[kd.positive]), int(train[neg].sum())
            if pos == 0 or n_neg == 0:
                constants[f, j] = 0.0 if pos == n_neg else (1.0 if pos else -1.0)
                continue
            model = restricted(s.model, stream, folds, f)
            problems[f, j] = ProblemState(
                FoldCSVC(kd.positive, kd.negative, kd.weight_pos, kd.weight_neg, fold=f,
                         n_classes=k),
                replace(s.solver, tol=float(est.tol)), n_rows=pos + n_neg,
                size=float(pos + n_neg), model=model, prev_n_support=model.n_support)
    return problems, constants


def _fold_models(client, coded: FoldCodedPartitions, est, problems: dict, constants: dict,
                 concurrent: bool) -> dict:
    """Each (fold, problem)'s FoldModel: the fold problems fitted at once (one run of the
    driver, certified to gap_tol each), or one run per fold."""
    models = {key: FoldModel(None, np.empty(0), v) for key, v in constants.items()}
    if not problems:
        return models
    keys = list(problems)
    groups = [keys] if concurrent else [[key for key in keys if key[0] == f]
                                        for f in dict.fromkeys(f for f, _ in keys)]
    n_sv = min(p.model.n_support for p in problems.values())
    r = int(min(getattr(est, "sample_size_", None) or MIN_FIRST_DRAW,
                max(n_sv // 4, MIN_FIRST_DRAW)))
    cfg = RunConfig(k=None, sample_size=r,
                    max_iter=10**6 if est.max_iter == -1 else int(est.max_iter),
                    violator_tol=float(est.violator_tol), gap_tol=float(est.gap_tol),
                    margin_tol=float(est.tol),
                    random_state=stream_id(est.random_seed_, FOLD_RUN_STREAM),
                    route=est.route)
    for group in groups:
        finals, _ = run_randsvm(client, coded, [problems[key] for key in group], cfg,
                                progress=log_iteration, cancelled=cancel_check())
        for key, p in zip(group, finals):
            m = p.model
            models[key] = FoldModel(m.X, np.asarray(m.coef, np.float64), float(m.intercept))
    return models


def _held_out_values(part: Partition, stream: int, folds: Folds, models: dict,
                     kernel) -> tuple:
    """(decision values (rows, problems), coded labels, weights) of the partition's rows
    held out by the fitted folds, each under its fold's models (runs on a worker)."""
    from randsvm_dist.numerics.kernels import decision_values_float64

    fold = folds.ids(row_keys(stream, part.offset, part.n_rows))
    fitted = folds.fitted
    n_problems = 1 + max(j for _, j in models)
    held = np.isin(fold, fitted)
    dec = np.zeros((int(held.sum()), n_problems))
    fold = fold[held]
    X = part.X[held]
    for (f, j), m in models.items():
        rows = np.flatnonzero(fold == f)
        if not len(rows):
            continue
        if m.sv is None or not len(m.coef):
            dec[rows, j] = m.intercept
        else:
            dec[rows, j] = decision_values_float64(X[rows], m.sv, m.coef, m.intercept,
                                                   kernel)
    return dec, part.y[held].astype(np.int64), np.maximum(part.weights()[held], 0.0)


def _pairs(k: int) -> list[tuple[int, int]]:
    from randsvm_dist.numerics.multiclass import ovo_pairs

    return ovo_pairs(k)
