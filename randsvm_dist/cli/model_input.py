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
    """The model named by ``args.model`` (see :func:`randsvm_dist.model_files.load.load_model`).

    Returns:
        the fitted estimator.

    Raises:
        DataFormatError: missing, unreadable, truncated, corrupt, or a pickle without
            ``--allow-pickle``.
    """
    from randsvm_dist.exceptions import DataFormatError
    from randsvm_dist.model_files.load import load_model as load

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
