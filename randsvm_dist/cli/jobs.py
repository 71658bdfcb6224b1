"""``randsvm-dist submit train|stream|predict ...`` and ``randsvm-dist jobs ...``: jobs whose
driver runs on the cluster (see :mod:`randsvm_dist.jobs`)."""

from __future__ import annotations

import argparse
import time

from randsvm_dist.cli.options import add_output, add_scheduler, emit

SUBMITTABLE = ("train", "stream", "predict")


def _security(args):
    from randsvm_dist.engine.tls import make_security

    return make_security(args.tls_ca_file, args.tls_cert, args.tls_key)


def job_spec(args: argparse.Namespace) -> dict:
    """The job's keyword arguments (see :mod:`randsvm_dist.jobs`) from the options of
    ``submit train|stream|predict``.

    Raises:
        ParameterError: a bad option value.
    """
    if args.kind == "train":
        from randsvm_dist.cli.train import estimator_params

        if getattr(args, "checkpoint", None) or getattr(args, "resume", False):
            from randsvm_dist.exceptions import ParameterError

            raise ParameterError("a submitted train job checkpoints into its job directory "
                                 "itself; drop --checkpoint/--resume")
        return {"data": args.data, "model": args.model, "params": estimator_params(args),
                "test": args.test, "overwrite": args.overwrite,
                "svm_type": getattr(args, "svm_type", "c_svc"),
                "weight_column": getattr(args, "weight_column", None)}
    if args.kind == "stream":
        from randsvm_dist.cli.stream import OPTIONAL, build_estimator

        est = build_estimator(args.method, C=args.C, random_state=args.random_state,
                              **{k: getattr(args, k) for k in OPTIONAL})
        return {"data": args.data, "estimator": type(est).__name__,
                "params": est.get_params(deep=False), "model": args.model,
                "test": args.test, "fan_in": args.fan_in, "overwrite": args.overwrite}
    return {"model": args.model, "data": args.data, "out": args.out,
            "overwrite": args.overwrite, "allow_pickle": args.allow_pickle}


def cmd_submit(args: argparse.Namespace) -> int:
    """Submit the command; print the job id at once.

    Returns:
        0.
    """
    from randsvm_dist import jobs

    job_id = jobs.submit(args.kind, scheduler=args.scheduler, job_dir=args.job_dir,
                         security=_security(args), **job_spec(args))
    emit(args, {"job_id": job_id, "job_dir": args.job_dir},
         f"{job_id}\n(randsvm-dist jobs status {job_id} --job-dir {args.job_dir})")
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    """``jobs list|status|logs|result|cancel|restart``.

    Returns:
        0; ``jobs status``: 1 for a failed job, 3 for a cancelled one (so a script can
        test it).

    Raises:
        ParameterError: no such job, or no result yet.
    """
    from randsvm_dist import jobs

    if args.action == "list":
        rows = jobs.list_jobs(args.job_dir)
        emit(args, {"jobs": rows}, "\n".join(
            f"{r['job_id']:40s} {r['state']:10s} attempt {r.get('attempt', 0)} "
            f"{time.strftime('%H:%M:%S', time.localtime(r.get('updated_at', 0)))}"
            for r in rows) or "no jobs")
    elif args.action == "status":
        st = jobs.status(args.job_dir, args.job_id)
        emit(args, st, f"{args.job_id}: {st['state']}"
             + (f" ({st['error']})" if st.get("error") else ""))
        return {"failed": 1, "cancelled": 3}.get(st["state"], 0)
    elif args.action == "logs":
        text = jobs.logs(args.job_dir, args.job_id)
        emit(args, {"log": text}, text.rstrip("\n"))
    elif args.action == "result":
        res = jobs.result(args.job_dir, args.job_id)
        emit(args, res, f"{args.job_id}: done; result:\n"
             + "\n".join(f"  {k}: {v}" for k, v in res.items() if k != "history"))
    elif args.action == "cancel":
        st = jobs.cancel(args.job_dir, args.job_id, args.scheduler, _security(args))
        emit(args, st, f"{args.job_id}: cancel asked ({st['state']})")
    elif args.action == "restart":
        jobs.restart(args.job_dir, args.job_id, args.scheduler, _security(args))
        emit(args, {"job_id": args.job_id}, f"{args.job_id}: submitted again")
    return 0


def register(subparsers) -> None:
    """Add the ``submit`` and ``jobs`` commands."""
    from importlib import import_module

    p = subparsers.add_parser("submit", help="run train, stream or predict as a job on the "
                                             "cluster; prints the job id at once")
    kinds = p.add_subparsers(dest="kind", required=True)
    for kind in SUBMITTABLE:
        import_module(f"{__package__}.{kind}").register(kinds)
        sub = kinds.choices[kind]
        sub.add_argument("--job-dir", required=True, metavar="PATH_OR_URL",
                         help="job directory shared with the workers (status, log, "
                              "result, checkpoints)")
        sub.set_defaults(func=cmd_submit)

    p = subparsers.add_parser("jobs", help="list, inspect or cancel submitted jobs")
    p.add_argument("action", choices=["list", "status", "logs", "result", "cancel", "restart"])
    p.add_argument("job_id", nargs="?", default=None)
    p.add_argument("--job-dir", required=True, metavar="PATH_OR_URL")
    add_scheduler(p)
    add_output(p, report=False)
    p.set_defaults(func=_checked_jobs)


def _checked_jobs(args: argparse.Namespace) -> int:
    from randsvm_dist.exceptions import ParameterError

    if args.action != "list" and not args.job_id:
        raise ParameterError(f"jobs {args.action} needs a JOB_ID")
    return cmd_jobs(args)
