"""scikit-learn compatible estimators over the sampling driver, one per problem kind."""

from randsvm_dist.estimators.classifier import RandSVMClassifier
from randsvm_dist.estimators.one_class import RandSVMOneClass
from randsvm_dist.estimators.regressor import RandSVMRegressor

__all__ = ["RandSVMClassifier", "RandSVMRegressor", "RandSVMOneClass"]
