"""The paper's support-set bound k (Theorem 3, the values used in its experiments).

The printed eq. (4) is k >= 16/eps^2 (1 + (1 + L^2)/(2 l)) ^2 log(4n/delta) + O(log n)
with the margin l and radius L unknown for a C-SVM; the paper's experiments replace the
bracket by a constant: k = 16 log(4n/delta) / eps^2 for separable data and
k = 32 log(4n/delta) / eps^2 otherwise (eps = 0.2, delta = 0.9 there). We use those.
"""

from __future__ import annotations

import math

from randsvm_dist.core.validation import check_positive


def support_bound(n_rows: int, epsilon: float = 0.2, delta: float = 0.9,
                  separable: bool = False) -> int:
    """k = ceil(c log(4 n / delta) / epsilon^2), c = 16 (separable) or 32.

    Raises:
        ParameterError: epsilon or delta not positive.
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_positive(delta, "delta")
    c = 16.0 if separable else 32.0
    return int(math.ceil(c * math.log(4.0 * max(n_rows, 1) / delta) / epsilon ** 2))
