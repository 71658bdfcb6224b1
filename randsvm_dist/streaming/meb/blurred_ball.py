"""Blurred Ball SVM: a streaming l2-SVM on the blurred ball cover (Nathan & Raghvendra,
after Agarwal & Sharathkumar).

Training keeps a sequence of balls ``B_1, ..., B_u`` in the augmented space of StreamSVM
(``[y phi(x); beta y; C^-1/2 e_n]``, see :mod:`.streamsvm`), each the minimum enclosing
ball of its *core set* ``K_i`` of stored points. A point is used only if it lies outside
every (1+epsilon)-expanded ball; such points fill a lookahead buffer, and when it holds
``lookahead`` points a new core set ``K_{u+1}`` = the points with non-zero weight in the
exact MEB of ``K_1 u ... u K_u u buffer`` (``cover='points'``, as in the paper's update)
is appended with its ball; balls with radius below ``epsilon/4 * r(B_{u+1})`` are
discarded, and at most ``max_balls`` are kept (oldest first). The ball with centre
``c = [w; b; ...]`` is the linear classifier ``f(x) = w.phi(x) + beta b``.

Departures from the paper (weights: rows of weight w enter as w copies, as in
:mod:`.streamsvm`; the paper has none): the MEB of the union is solved exactly (pairwise Frank-Wolfe
to ~1e-13) instead of a (1+epsilon)-core set; ``max_balls`` bounds memory (the paper's
bound on the number of balls grows like log(1/eps)/eps); rows are normalised to unit
norm (``normalize='auto'``), which is how the paper puts all points on a sphere.
``cover='balls'`` is a variant whose new ball is the MEB of the newest *ball* and the
buffer: balls are nested, every point seen is within (1+eps) r of the newest centre,
and the linear form needs no stored points.

Classification (``rule``):

- ``'score'`` (default): the *support* of x is the set of balls whose (1+epsilon)
  expansion contains x with its nearer label (``y = sign f_i(x)``, i.e. the smaller of
  the two augmented distances); the score is the sum of the signed distances
  ``f_i(x) / |(w_i, b_i)|`` of x to those balls' separators. Empty support falls back
  to the largest ball.
- ``'support'``: the majority vote ``sum sign f_i(x)`` over the support (ties: largest
  ball).
- ``'largest'``: the largest ball alone (the newest one with ``cover='balls'``).

Merging two covers of disjoint streams keeps the largest balls of both and appends the
exact MEB of all their core points (their e_n parts are orthogonal).
"""

from __future__ import annotations

import numpy as np

from randsvm_dist.core.validation import check_choice, check_int
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.streaming.meb._cover import BallCover
from randsvm_dist.streaming.meb.streamsvm import BallCoverSVM

RULES = ("score", "support", "largest")
COVERS = ("points", "balls")


class BlurredBallSVM(BallCoverSVM):
    """One-pass l2-SVM on a blurred ball cover (several balls, support/score rules).

    Args:
        C: l2-SVM cost.
        epsilon: blur; points inside a (1+epsilon)-expanded ball are skipped, balls
            smaller than epsilon/4 of the newest are discarded.
        lookahead: buffer size L of outside points before a new ball is built. Default
            1000 and kernel 'rbf', for the reason given in StreamSVM (with L = 10 and a
            linear kernel the cover loses to the majority class on ijcnn1, w8a,
            skin_nonskin and german.numer_scale; see benchmarks/bench_defaults.py).
        kernel, gamma, degree, coef0: as StreamSVM (cover='points' stores core points
            for every kernel; cover='balls' with 'linear' keeps explicit w's).
        fit_intercept: learn a bias (augmented coordinate).
        normalize: unit-norm rows ('auto': all kernels but rbf), as StreamSVM; the paper
            normalises the augmented points onto a sphere.
        max_balls: cap on the balls kept.
        rule: 'score' (default), 'support' or 'largest' (see the module docstring).
        cover: 'points' (default, the paper's: a new ball is the exact MEB of the live
            balls' core points and the buffer; points are stored, even for the linear
            kernel) or 'balls' (the MEB of the newest ball and the buffer: nested balls,
            explicit w for the linear kernel, every point provably enclosed).
        class_weight: None, {label: weight} or 'balanced' (see
            :mod:`randsvm_dist.streaming.base`): scales each row's slack cost C.
        random_state: seeds the per-class learners (the algorithm is deterministic).
    """

    def __init__(self, C: float = 1.0, epsilon: float = 0.1, lookahead: int = 1000,
                 kernel: str = "rbf", gamma="scale", degree: int = 3,
                 coef0: float = 0.0, fit_intercept: bool = True, normalize="auto",
                 max_balls: int = 32, rule: str = "score", cover: str = "points",
                 class_weight=None,
                 random_state=None):
        super().__init__(C=C, lookahead=lookahead, kernel=kernel, gamma=gamma, degree=degree,
                         coef0=coef0, fit_intercept=fit_intercept, normalize=normalize,
                         class_weight=class_weight, random_state=random_state)
        self.epsilon = epsilon
        self.max_balls = max_balls
        self.rule = rule
        self.cover = cover

    def _new_binary(self, n_features: int, seed: int):
        """A binary blurred-ball learner (raises ParameterError on bad parameters)."""
        args = self._cover_args()
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) \
                or not np.isfinite(eps) or eps < 0:
            raise ParameterError(f"epsilon must be a number >= 0; got {eps!r}")
        kb = check_int(self.max_balls, "max_balls", 1)
        check_choice(self.rule, "rule", RULES)
        check_choice(self.cover, "cover", COVERS)
        return _BlurredCover(n_features, epsilon=float(eps), max_balls=int(kb), rule=self.rule,
                             coreset=self.cover == "points", **args)

    def _merge_settings(self) -> dict:
        """StreamSVM's settings plus the blur and the cover kind."""
        return {**super()._merge_settings(), "epsilon": float(self.epsilon),
                "cover": self.cover}

    def set_params(self, **params):
        """scikit-learn set_params; a new ``rule`` also applies to fitted learners."""
        super().set_params(**params)
        if "rule" in params and hasattr(self, "learners_"):
            check_choice(params["rule"], "rule", RULES)
            for learner in self.learners_:
                learner.rule = params["rule"]
        return self

    @property
    def n_balls_(self) -> int:
        """Balls in the (flushed) cover of a binary problem."""
        self._check_fitted()
        return self.learners_[0].flushed().n_balls


class _BlurredCover(BallCover):
    """BallCover with several balls and the paper's classification rules."""

    def __init__(self, n_features: int, *, rule: str, **kw):
        super().__init__(n_features, **kw)
        self.rule = rule

    def decision_function(self, X) -> np.ndarray:
        """Signed scores under ``self.rule`` (float64, positive = class +1)."""
        cov = self.flushed()
        f = cov.ball_scores(X)
        nb = cov.n_balls
        big = int(np.argmax(cov.rr[:nb]))
        if self.rule == "largest":
            return f[:, big]
        norms = np.sqrt(np.maximum(cov.Q[:nb], 1e-300))
        sgn = np.where(f >= 0, 1.0, -1.0)
        d2 = cov.sq_distances(X, sgn)  # the nearer of the two labels
        lim = ((1.0 + cov.eps) * cov.rr[:nb]) ** 2
        inside = d2 <= lim * (1.0 + 1e-12)
        largest = f[:, big] / norms[big]
        if self.rule == "score":
            s = np.where(inside, f / norms, 0.0).sum(axis=1)
        else:
            s = np.where(inside, sgn, 0.0).sum(axis=1)
            s = np.where(s == 0, largest, s)
        return np.where(inside.any(axis=1), s, largest)
