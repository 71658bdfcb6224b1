"""Issue 40 items 10 and 11: a closed Client is one line; gap_tol=0 behaves as the README
says (every stop without the certificate warns)."""

import pytest
from sklearn.exceptions import ConvergenceWarning

from randsvm_dist.data import make_arrays
from randsvm_dist.estimators import RandSVMClassifier
from randsvm_dist.exceptions import ClusterError


def test_closed_client_is_one_line(dask_client):
    from distributed import Client

    X, y = make_arrays("twonorm", 300, seed=1)
    closed = Client(dask_client.scheduler.address)
    closed.close()
    with pytest.raises(ClusterError, match="is closed") as e:
        RandSVMClassifier(client=closed).fit(X, y)
    assert "\n" not in str(e.value)


def test_gap_tol_zero_warns_and_is_not_certified(dask_client):
    X, y = make_arrays("twonorm", 600, seed=2)
    with pytest.warns(ConvergenceWarning, match="gap_tol=0 runs until no row violates"):
        est = RandSVMClassifier(gap_tol=0, client=dask_client, random_state=0).fit(X, y)
    assert est.certified_ is False
    assert est.relative_gap_ > 0
