"""Loading a saved model of any kind for ``predict`` and ``evaluate``."""

from __future__ import annotations

import argparse


def add_model_input(p: argparse.ArgumentParser) -> None:
    """The ``model`` argument and ``--allow-pickle`` (old joblib models, trusted files only)."""
    p.add_argument("model", help="model file (train --model or stream --model)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="also load an old joblib pickle model; a pickle can run any code, "
                        "use only for a file you trust")


def check_model_input(args: argparse.Namespace) -> None:
    """Refuse a local model path that is missing, a directory or unreadable, at once
    (before the command's imports and its cluster); load_model says the same later for
    anything this look cannot see (URLs).

    Raises:
        DataFormatError: as load_model.
    """
    import os

    from randsvm_dist.exceptions import DataFormatError

    path = args.model
    if "://" in path:
        return
    if os.path.isdir(path):
        raise DataFormatError(f"model {path} is a directory; give the model file")
    if not os.path.exists(path):
        raise DataFormatError(f"model file {path} not found; give the path that "
                              "train --model or stream --model wrote")
    if not os.access(path, os.R_OK):
        raise DataFormatError(f"model file {path} is not readable (permission denied)")


def load_model(args: argparse.Namespace):
    """The model named by ``args.model`` (see :func:`randsvm_dist.app.model_io.load_model`).

    Returns:
        the fitted estimator.

    Raises:
        DataFormatError: missing, unreadable, truncated, corrupt, or a pickle without
            ``--allow-pickle``.
    """
    from randsvm_dist.app.model_io import load_model as load
    from randsvm_dist.exceptions import DataFormatError

    try:
        return load(args.model, allow_pickle=args.allow_pickle)
    except FileNotFoundError:
        raise DataFormatError(f"model file {args.model} not found; give the path that "
                              "train --model or stream --model wrote") from None
    except IsADirectoryError:
        raise DataFormatError(f"model {args.model} is a directory; give the model file") \
            from None
    except PermissionError:
        raise DataFormatError(f"model file {args.model} is not readable (permission "
                              "denied)") from None


def model_data(args: argparse.Namespace, est):
    """What ``predict``/``evaluate`` read ``args.data`` as: the path (the model's own
    feature columns and one-hot categories apply, ``data.dataset.fitted_options``), or
    with ``--one-hot`` for a model that saved no categories (a stock LIBSVM model, one
    fitted on arrays) the Dataset with those columns one-hot encoded by its own values.

    Raises:
        SchemaError: ``--one-hot`` names a column the model did not one-hot encode.
    """
    from randsvm_dist.cli.data import one_hot_columns
    from randsvm_dist.exceptions import SchemaError

    asked = one_hot_columns(args)
    if not asked:
        return args.data
    saved = getattr(est, "one_hot_categories_", None) or {}
    if saved:
        other = [c for c in asked if c not in saved]
        if other:
            raise SchemaError(f"--one-hot names {other}; the model one-hot encodes "
                              f"{sorted(saved)} (its categories are saved in it)")
        return args.data
    from randsvm_dist.data import Dataset

    return Dataset.open(args.data, feature_columns=getattr(est, "feature_columns_", None),
                        one_hot_columns=asked)
