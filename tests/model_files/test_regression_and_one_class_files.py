"""Regression and one-class models are LIBSVM model files that stock LIBSVM loads and
predicts identically (epsilon_svr, one_class), and that load back as estimators."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from randsvm_dist.data import make_arrays
from randsvm_dist.estimators import RandSVMOneClass, RandSVMRegressor


@pytest.mark.parametrize("make", [
    lambda c: (RandSVMRegressor(C=5, epsilon=0.5, gamma=0.2, client=c, random_state=0),
               "friedman1"),
    lambda c: (RandSVMOneClass(nu=0.1, gamma="scale", client=c, random_state=0),
               "twonorm"),
])
def test_stock_libsvm_predicts_what_the_estimator_predicts(dask_client, tmp_path, make):
    from libsvm.svmutil import svm_load_model, svm_predict

    est, data = make(dask_client)
    X, y = make_arrays(data, 1500, seed=3)
    est.fit(X, y)
    path = tmp_path / "m.model"
    est.save(path)
    stock = svm_load_model(str(path))
    assert stock is not None
    labels, _, values = svm_predict(np.zeros(len(X)), sp.csr_matrix(X.astype(np.float64)),
                                    stock, "-q")
    values = np.asarray(values)[:, 0]
    if isinstance(est, RandSVMRegressor):
        np.testing.assert_allclose(np.asarray(labels), est.predict(X), atol=1e-4)
    else:
        np.testing.assert_allclose(values, est.decision_function(X), atol=1e-4)
        np.testing.assert_array_equal(np.asarray(labels), est.predict(X))
    back = type(est).load(path)
    assert back.client is None and back.get_params() == {**est.get_params(), "client": None}
    np.testing.assert_allclose(back.predict(X), est.predict(X), atol=1e-9)
    with pytest.raises(Exception, match="holds a"):
        (RandSVMOneClass if isinstance(est, RandSVMRegressor) else RandSVMRegressor).load(path)
