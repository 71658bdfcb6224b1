"""A job's arguments: which each kind takes and needs (``SPEC_KEYS``), checked and made
absolute before a job is submitted, its outputs checked and claimed in the job directory."""

from __future__ import annotations

import os

from randsvm_dist.data.filesystem import is_url
from randsvm_dist.exceptions import ParameterError
from randsvm_dist.jobs.store import JobStore

KINDS = ("train", "stream", "predict")
#: the keyword arguments each kind takes (besides scheduler, job_dir, security)
SPEC_KEYS = {
    "train": ("data", "model", "params", "test", "overwrite", "svm_type", "weight_column"),
    "stream": ("data", "estimator", "params", "model", "test", "fan_in", "overwrite"),
    "predict": ("model", "data", "out", "overwrite", "allow_pickle"),
}
_REQUIRED = {"train": ("data", "model"), "stream": ("data", "estimator"),
             "predict": ("model", "data", "out")}
_PATHS = ("data", "model", "out", "test")


def _absolute(value):
    """A local path made absolute (a URL or a non-path as it is)."""
    if isinstance(value, str) and value and not is_url(value):
        return os.path.abspath(os.path.expanduser(value))
    return value


def check_outputs(kind: str, spec: dict) -> None:
    """The job's own output checks, before anything is submitted.

    Raises:
        DataFormatError: an output may not be written (exists, is an input).
    """
    from randsvm_dist.app.model_io import check_model_path
    from randsvm_dist.data.outputs import check_not_input, check_output_dir

    inputs = (spec.get("data"), spec.get("test"))
    if kind in ("train", "stream") and spec.get("model"):
        check_model_path(spec["model"], spec.get("overwrite", False))
        check_not_input(spec["model"], inputs, "model")
    if kind == "predict":
        check_not_input(spec["out"], (spec["data"], spec["model"]), "output", directory=True)
        check_output_dir(spec["out"], spec.get("overwrite", False))


#: the argument naming each kind's output
OUTPUT_KEY = {"train": "model", "stream": "model", "predict": "out"}
ACTIVE = ("submitted", "running")


def check_unclaimed(store: JobStore, kind: str, spec: dict) -> None:
    """A job claims its output at submit: refuse one that another job of the directory,
    submitted or running, is to write.

    Raises:
        DataFormatError: naming the other job and its state.
    """
    from randsvm_dist.exceptions import DataFormatError

    output = spec.get(OUTPUT_KEY[kind])
    if not output:
        return
    for other in store.job_ids():
        if not store.exists(other, "status.json"):
            continue  # being submitted this moment
        st = store.read_json(other, "status.json")
        if st.get("state") not in ACTIVE:
            continue
        theirs = store.read_json(other, "spec.json")
        if theirs["args"].get(OUTPUT_KEY[theirs["kind"]]) == output:
            raise DataFormatError(f"{output} is the output of job {other} ({st['state']}) "
                                  "in this job directory; wait for it, cancel it, or choose "
                                  "another path")


def check_spec(kind: str, spec: dict) -> dict:
    """The job's arguments, checked and with absolute paths.

    Raises:
        ParameterError: unknown kind, a missing or unknown argument.
    """
    if kind not in KINDS:
        raise ParameterError(f"cannot submit {kind!r}; choose one of {', '.join(KINDS)}")
    unknown = sorted(set(spec) - set(SPEC_KEYS[kind]))
    if unknown:
        raise ParameterError(f"a {kind} job does not take {', '.join(unknown)}; it takes "
                             f"{', '.join(SPEC_KEYS[kind])}")
    missing = [k for k in _REQUIRED[kind] if not spec.get(k)]
    if missing:
        raise ParameterError(f"a {kind} job needs {', '.join(missing)}")
    if "params" in spec and not isinstance(spec["params"], dict):
        raise ParameterError(f"params must be a dict of keyword arguments; got "
                             f"{type(spec['params']).__name__}")
    return {k: _absolute(v) if k in _PATHS else v for k, v in spec.items()}
