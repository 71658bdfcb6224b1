"""LIBSVM's problem parameters (``SolverParams``) and the problem kinds it solves.

Supported LIBSVM ``svm_type`` values (``SolverParams.svm_type``):

- 0, C-SVC: targets in {-1, +1}; dual_coef = y_i alpha_i; f(x) > 0 predicts +1.
- 3, epsilon-SVR: real targets; dual_coef = alpha_i - alpha_i*; f(x) is the prediction.
- 2, one-class (nu): targets ignored; dual_coef = alpha_i in LIBSVM's scaling (box 1,
  sum alpha = nu l); f(x) >= 0 is an inlier.

In every case f(x) = sum_i dual_coef_i k(x_i, x) + intercept with intercept = -rho.
"""

from __future__ import annotations

from dataclasses import dataclass

from randsvm_dist.exceptions import ParameterError
from randsvm_dist.numerics.kernels import LIBSVM_KERNEL_TYPE, Kernel

C_SVC, ONE_CLASS, EPSILON_SVR = 0, 2, 3
SVM_TYPES = {C_SVC: "c_svc", ONE_CLASS: "one_class", EPSILON_SVR: "epsilon_svr"}
# who solves a working set (``exact.solving.solve_rows``; ``solvers.onedal_backend``)
SOLVER_BACKENDS = ("libsvm", "onedal", "auto")


@dataclass(frozen=True)
class SolverParams:
    """LIBSVM parameters with LIBSVM's meanings (``svm-train`` option in brackets).

    Attributes:
        C: box constraint (-c; C-SVC and SVR, unused by one-class).
        kernel: resolved kernel (-t, -g, -d, -r).
        weight_pos, weight_neg: class weights (C is multiplied by them for the +1/-1
            class; C-SVC only: -w1, -w-1).
        tol: LIBSVM's stopping tolerance (-e).
        cache_size: LIBSVM's kernel cache in MB (-m).
        shrinking: LIBSVM's shrinking heuristic (-h).
        svm_type: 0 C-SVC, 2 one-class, 3 epsilon-SVR (-s).
        epsilon: epsilon of the epsilon-insensitive loss (-p; SVR only).
        nu: nu of the one-class SVM (-n; one-class only), in (0, 1].
        backend: who solves a working set: 'libsvm' (libsvm-official, the reference),
            'onedal' (scikit-learn-intelex where it solves the problem, see
            ``solvers.onedal_backend``) or 'auto' (oneDAL where it was measured faster).
            Not a LIBSVM option: ``options()`` leaves it out.

    Raises:
        ParameterError: an svm_type other than 0, 2, 3, nu / epsilon out of range, or an
            unknown backend.
    """

    C: float = 1.0
    kernel: Kernel = Kernel()
    weight_pos: float = 1.0
    weight_neg: float = 1.0
    tol: float = 1e-3
    cache_size: float = 200.0
    shrinking: bool = True
    svm_type: int = C_SVC
    epsilon: float = 0.1
    nu: float = 0.5
    backend: str = "libsvm"

    def __post_init__(self):
        if self.svm_type not in SVM_TYPES:
            raise ParameterError(f"svm_type must be one of {sorted(SVM_TYPES)} (LIBSVM's -s: "
                                 f"0 C-SVC, 2 one-class, 3 epsilon-SVR); got {self.svm_type!r}")
        if self.svm_type == ONE_CLASS and not 0.0 < self.nu <= 1.0:
            raise ParameterError(f"nu must be in (0, 1]; got {self.nu!r}")
        if self.svm_type == EPSILON_SVR and not self.epsilon >= 0.0:
            raise ParameterError(f"epsilon must be >= 0; got {self.epsilon!r}")
        if self.backend not in SOLVER_BACKENDS:
            raise ParameterError(f"backend must be one of {SOLVER_BACKENDS}; "
                                 f"got {self.backend!r}")

    def options(self) -> str:
        """LIBSVM's option string for svm_train."""
        k, f = self.kernel, float  # every number as a plain float's repr (no numpy repr)
        opts = (f"-s {int(self.svm_type)} -t {LIBSVM_KERNEL_TYPE[k.name]} -c {f(self.C)!r} "
                f"-g {f(k.gamma)!r} -d {int(k.degree)} -r {f(k.coef0)!r} -e {f(self.tol)!r} "
                f"-m {f(self.cache_size)!r} -h {int(self.shrinking)}")
        if self.svm_type == C_SVC:
            opts += f" -w1 {f(self.weight_pos)!r} -w-1 {f(self.weight_neg)!r}"
        elif self.svm_type == EPSILON_SVR:
            opts += f" -p {f(self.epsilon)!r}"
        else:
            opts += f" -n {self.nu!r}"
        return opts + " -q"
