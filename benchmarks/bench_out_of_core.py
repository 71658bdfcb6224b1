"""Out-of-core fits on a real cluster with worker memory limits, against the arithmetic floor.

Starts ``dask scheduler`` and ``dask worker --nworkers W --nthreads 1 --memory-limit M`` on
127.0.0.1, runs ``randsvm-dist train DATA --scheduler ADDR --cache ...`` as a user does,
and records:

- the fit's time and its phases (solve and scan seconds per iteration, from the report's
  history), the certificate, the memory plan the fit made (``history_[0]['memory_plan']``);
- every worker process's peak RSS (sampled every 0.2 s from /proc through psutil) against
  its limit, the client's peak RSS, and the pauses and restarts in the workers' log;
- the floor: the kernel evaluations the scans did (``kernel_evals`` + screening) at this
  machine's measured single-core float32 GEMM and numpy exp rates, shared by the workers'
  cores, plus the Parquet bytes read (one read of every file per pass when re-read) at
  the measured read-and-decode rate (``floor_s``); and the same evaluations at the scan
  kernel's own single-core rate on rows in memory (``kernel_floor_s``, lower: the fused
  kernel's exp beats numpy's).

    python benchmarks/bench_out_of_core.py --make curved16 --rows 10000000 --partitions 40 \\
        --data /tmp/c16-1e7 --memory-limit 512MB --cache false --C 1 --gamma 0.05
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

RESULTS = Path(__file__).resolve().parent / "results" / "out_of_core.jsonl"


def machine_rates(d: int, n_sv: int = 4096, rows: int = 4096) -> dict:
    """Single-core rates, best of 5: float32 GEMM (flop/s), numpy's float32 exp (values/s),
    and the scan's own RBF kernel (``kernels.decision_values``, evaluations/s) on rows
    already in memory."""
    from threadpoolctl import threadpool_limits

    from randsvm_dist.numerics.kernels import Kernel, decision_values

    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, d), dtype=np.float32)
    S = rng.standard_normal((n_sv, d), dtype=np.float32)
    K = np.empty((rows, n_sv), np.float32)
    with threadpool_limits(1):
        gemm = min(_timed(lambda: np.matmul(X, S.T, out=K)) for _ in range(5))
    np.negative(np.abs(K, out=K), out=K)   # exps of kernel values: arguments <= 0
    E = np.empty_like(K)
    exp = min(_timed(lambda: np.exp(K, out=E)) for _ in range(5))
    Xk = rng.standard_normal((16 * rows, d), dtype=np.float32)
    coef = rng.standard_normal((n_sv, 1)).astype(np.float32)
    kernel = Kernel("rbf", gamma=1.0 / d)
    with threadpool_limits(1):
        decision_values(Xk, S, coef, np.zeros(1), kernel)
        fused = min(_timed(lambda: decision_values(Xk, S, coef, np.zeros(1), kernel))
                    for _ in range(3))
    return {"gemm_flops_per_core": 2.0 * rows * n_sv * d / gemm,
            "exp_per_core": rows * n_sv / exp, "kernel_evals_per_core": 16 * rows * n_sv / fused}


def read_rate(data: Path) -> float:
    """Parquet bytes per second read and decoded into float32 rows by one core (the
    files as they are cached by the OS: the rate a re-read pass gets)."""
    from randsvm_dist.data.dataset import Dataset

    ds = Dataset.open(str(data))
    n = min(ds.n_partitions, 4)
    size = sum(os.path.getsize(p) for p in ds.paths[:n])
    t = _timed(lambda: [ds.read_partition(i) for i in range(n)])
    return size / t


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class PeakRss:
    """Peak RSS of a process and its descendants, sampled in a thread."""

    def __init__(self, pid: int):
        self.root = psutil.Process(pid)
        self.peaks: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for p in procs:
                try:
                    rss = p.memory_info().rss
                    self.names[p.pid] = " ".join(p.cmdline()[:4])
                except psutil.Error:
                    continue
                self.peaks[p.pid] = max(self.peaks.get(p.pid, 0), rss)
            self.stop.wait(0.2)

    def done(self) -> dict[int, int]:
        self.stop.set()
        self.thread.join()
        return self.peaks


def start_cluster(tmp: Path, workers: int, memory_limit: str):
    """A scheduler and ``workers`` single-threaded workers under one nanny process."""
    file = tmp / "scheduler.json"
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                              "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                              "--scheduler-file", str(file)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not file.exists():
        time.sleep(0.2)
    address = json.loads(file.read_text())["address"]
    log = open(tmp / "workers.log", "wb")
    work = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                             "--nworkers", str(workers), "--nthreads", "1", "--host",
                             "127.0.0.1", "--no-dashboard", "--memory-limit", memory_limit],
                            stdout=log, stderr=subprocess.STDOUT)
    from distributed import Client

    with Client(address, timeout="30s") as c:
        c.wait_for_workers(workers, timeout=120)
    return address, sched, work


def floor_seconds(history: list[dict], rates: dict, d: int, cores: int, file_bytes: int,
                  reread: bool, read_bps: float) -> dict:
    """The arithmetic floor of the scans: their kernel evaluations at the measured rates
    on ``cores`` cores, plus the Parquet bytes read per pass."""
    evals = sum(r["kernel_evals"] + r["screening_kernel_evals"] for r in history)
    per_eval = 2.0 * d / rates["gemm_flops_per_core"] + 1.0 / rates["exp_per_core"]
    compute = evals * per_eval / cores
    kernel = evals / rates["kernel_evals_per_core"] / cores
    passes = len({r["iteration"] for r in history})
    io = (passes if reread else 1) * file_bytes / read_bps / cores
    return {"kernel_evals": int(evals), "compute_floor_s": compute, "io_floor_s": io,
            "floor_s": compute + io, "kernel_floor_s": kernel + io,
            "best_floor_s": min(compute, kernel) + io}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--make", help="generator to write DATA with first, if it is missing")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=40)
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", default="false")
    ap.add_argument("--C", default="1")
    ap.add_argument("--gamma", default="0.05")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args()
    data = Path(a.data)
    if a.make and not data.exists():
        subprocess.run(["randsvm-dist", "data", "make", a.make, str(data), "--rows",
                        str(a.rows), "--partitions", str(a.partitions), "--seed", "1"],
                       check=True)
    from randsvm_dist.data.dataset import Dataset

    ds = Dataset.open(str(data))
    file_bytes = sum(os.path.getsize(p) for p in ds.paths)
    rates = machine_rates(ds.n_features)
    read_bps = read_rate(data)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        address, sched, work = start_cluster(tmp, a.workers, a.memory_limit)
        workers_rss = PeakRss(work.pid)
        cmd = ["randsvm-dist", "train", str(data), "--scheduler", address, "--cache",
               a.cache, "--C", a.C, "--gamma", a.gamma, "--model", str(tmp / "m.model"),
               "--report", str(tmp / "report.json"), "--overwrite"]
        t0 = time.perf_counter()
        fit = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        client_rss = PeakRss(fit.pid)
        out = fit.communicate()[0].decode()
        seconds = time.perf_counter() - t0
        client_peak = max(client_rss.done().values(), default=0)
        peaks = workers_rss.done()
        log = (tmp / "workers.log").read_text()
        report = json.loads((tmp / "report.json").read_text()) if fit.returncode == 0 else {}
        work.terminate()
        sched.terminate()
        work.wait(30)
        sched.wait(30)
    history = report.get("history", [])
    worker_peaks = sorted((v for pid, v in peaks.items()
                           if "spawn_main" in workers_rss.names.get(pid, "")
                           or "multiprocessing" in workers_rss.names.get(pid, "")),
                          reverse=True)[:a.workers]
    row = {
        "label": a.label, "data": str(data), "rows": ds.n_rows, "features": ds.n_features,
        "parquet_bytes": file_bytes, "memory_limit": a.memory_limit, "workers": a.workers,
        "cache": a.cache, "C": float(a.C), "gamma": float(a.gamma), "rc": fit.returncode,
        "fit_seconds": seconds, "certified": report.get("certified"),
        "relative_gap": report.get("relative_gap"), "n_support": report.get("n_support"),
        "iterations": len({r["iteration"] for r in history}),
        "solve_seconds": [round(r["solve_seconds"], 2) for r in history],
        "scan_seconds": [round(r["scan_seconds"], 2) for r in history],
        "evals_per_core_second": [round(r["kernel_evals_per_core_second"] / 1e9, 3)
                                  for r in history],
        "memory_plan": (json.loads(history[0]["memory_plan"])
                        if history and history[0].get("memory_plan") else None),
        "scan_worker_rss_mb": [round(r.get("scan_worker_rss", 0) / 1e6) for r in history],
        "worker_peak_rss_mb": [round(v / 1e6) for v in worker_peaks],
        "all_process_peaks_mb": {workers_rss.names.get(k, str(k))[:60] + f" [{k}]":
                                 round(v / 1e6) for k, v in peaks.items()},
        "client_peak_rss_mb": round(client_peak / 1e6),
        "restarts": log.count("Restarting"), "pauses": log.count("Pausing worker"),
        "machine": {k: round(v / 1e9, 3) for k, v in rates.items()},
        "read_mb_per_s": round(read_bps / 1e6),
        "load_average_before": load0, "load_average_after": os.getloadavg(),
        "command": " ".join(sys.argv), "train_command": " ".join(cmd[:2] + ["DATA"] + cmd[3:]),
        "tail": out.strip().splitlines()[-3:],
        "iteration_lines": [ln for ln in out.splitlines() if ln.startswith("iter ")],
    }
    if history:
        row.update(floor_seconds(history, rates, ds.n_features, a.workers, file_bytes,
                                 a.cache == "false", read_bps))
        row["fit_over_floor"] = seconds / row["best_floor_s"]
        row["scan_over_floor"] = sum(r["scan_seconds"] for r in history) / row["best_floor_s"]
    with open(a.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k != "all_process_peaks_mb"}, indent=1))


if __name__ == "__main__":
    main()
