"""Checkpoints of the RandSVM driver: its state after each iteration, written atomically.

``<dir>/state.npz`` holds the ``DriverState`` (JSON header plus arrays, no pickle; see
``core.packing.pack_objects``) and a fingerprint of the run (data shape, classes,
settings). It is replaced as one unit after every iteration, so a crash leaves the last
complete state. A run started again with the same data and settings and ``resume`` goes on
from there and ends with the model the uninterrupted run would have given; a checkpoint of
another run is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time

from randsvm_dist.core.packing import pack_objects, unpack_objects
from randsvm_dist.data.filesystem import makedirs, read_bytes
from randsvm_dist.data.publish import write_bytes_atomic
from randsvm_dist.exceptions import DataFormatError, ParameterError

log = logging.getLogger("randsvm_dist")

FORMAT = "randsvm-dist-checkpoint"
VERSION = 1
STATE_FILE = "state.npz"


def _classes() -> dict[str, type]:
    from randsvm_dist.exact.kinds import KINDS
    from randsvm_dist.exact.state import DriverState, ProblemState, SupportModel, WorkingSet
    from randsvm_dist.numerics.kernels import Kernel
    from randsvm_dist.solvers.params import SolverParams

    return {c.__name__: c for c in (DriverState, ProblemState, SupportModel, WorkingSet,
                                    SolverParams, Kernel, *KINDS.values())}


def run_fingerprint(cfg, problems, parts, classes) -> str:
    """A digest of what makes two runs the same run: settings, problems, data shape."""
    from dataclasses import asdict

    facts = {"cfg": asdict(cfg), "solvers": [asdict(p.solver) for p in problems],
             "kinds": [repr(p.kind) for p in problems], "rows": parts.n_rows,
             "features": parts.n_features, "partition_rows": [int(v) for v in parts.sizes],
             "classes": [str(c) for c in (classes if classes is not None else [])]}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def is_checkpoint(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a checkpoint file this project wrote (any run's)."""
    try:
        unpack_objects(read_bytes(path), _classes(), FORMAT, VERSION, os.fspath(path))
    except (DataFormatError, OSError):
        return False
    return True


class Checkpoint:
    """The checkpoint directory of one run (local path or fsspec URL).

    Args:
        directory: where ``state.npz`` lives (created).
        fingerprint: ``run_fingerprint`` of this run.

    Raises:
        DataFormatError: the directory cannot be created or written (e.g. read-only).
    """

    def __init__(self, directory: str | os.PathLike, fingerprint: str):
        self.directory = os.fspath(directory).rstrip("/")
        self.fingerprint = fingerprint
        self.path = f"{self.directory}/{STATE_FILE}"
        self.last_bytes = 0
        self.last_seconds = 0.0
        makedirs(self.directory)  # a read-only place: one DataFormatError naming it

    def save(self, state) -> None:
        """Write ``state`` (a DriverState) as the directory's state, atomically."""
        t0 = time.perf_counter()
        data = pack_objects(state, _classes(), FORMAT, VERSION,
                            {"fingerprint": self.fingerprint, "iteration": state.iteration})
        write_bytes_atomic(self.path, data)
        self.last_bytes, self.last_seconds = len(data), time.perf_counter() - t0

    def load(self):
        """The saved DriverState, or None when there is none yet.

        Raises:
            ParameterError: the checkpoint belongs to another run (other data or settings).
            DataFormatError: the file is corrupt.
        """
        try:
            data = read_bytes(self.path)
        except FileNotFoundError:
            return None
        state, header = unpack_objects(data, _classes(), FORMAT, VERSION, self.path)
        if header.get("fingerprint") != self.fingerprint:
            raise ParameterError(f"{self.path} is the checkpoint of another run (other data "
                                 "or settings); use another --checkpoint directory, or "
                                 "delete it to start over")
        if type(state).__name__ != "DriverState":
            raise DataFormatError(f"{self.path}: not a driver state")
        log.info("resuming from %s: iteration %d done", self.path, state.iteration)
        return state
