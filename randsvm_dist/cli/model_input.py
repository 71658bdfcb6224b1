"""Loading a saved model of any kind for ``predict`` and ``evaluate``."""

from __future__ import annotations

import argparse


def add_model_input(p: argparse.ArgumentParser) -> None:
    """The ``model`` argument and ``--allow-pickle`` (old joblib models, trusted files only)."""
    p.add_argument("model", help="model file (train --model or stream --model)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="also load an old joblib pickle model; a pickle can run any code, "
                        "use only for a file you trust")


def load_model(args: argparse.Namespace):
    """The model named by ``args.model`` (see :func:`randsvm_dist.model_files.load_model`).

    Returns:
        the fitted estimator.

    Raises:
        DataFormatError: truncated, corrupt, or a pickle without ``--allow-pickle``.
        OSError: the file cannot be read.
    """
    from randsvm_dist.model_files import load_model as load

    return load(args.model, allow_pickle=args.allow_pickle)
