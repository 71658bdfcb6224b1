"""scikit-learn compatible estimators over the sampling driver, one per problem kind."""

from randsvm_dist.estimators.classifier import RandSVMClassifier
from randsvm_dist.estimators.one_class import RandSVMOneClass
from randsvm_dist.estimators.regressor import RandSVMRegressor

# the one registry of estimators, by LIBSVM's svm_type name (the command line's --svm-type)
ESTIMATORS = {cls._svm_type: cls for cls in (RandSVMClassifier, RandSVMRegressor,
                                             RandSVMOneClass)}

__all__ = ["ESTIMATORS", "RandSVMClassifier", "RandSVMRegressor", "RandSVMOneClass"]
