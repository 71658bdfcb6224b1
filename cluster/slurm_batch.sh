#!/bin/bash
# One SLURM allocation holds the whole run: a Dask scheduler and this driver on the first
# task's node, one single-threaded worker per allocated task (= core) via srun, then
# randsvm-dist train. Every connection is TLS with a CA and certificate made for this job
# only (in a private directory, mode 0700, keys 0600, on the shared filesystem): other
# users of the nodes cannot connect.
#
#   sbatch cluster/slurm_batch.sh TRAIN TEST [OUTDIR [randsvm-dist train options...]]
#   sbatch cluster/slurm_batch.sh /scratch/$USER/cb-train /scratch/$USER/cb-test
#
# The #SBATCH lines below are a 4-node site's sizes; sbatch's own options override them,
# e.g. on one 2-core node (as tests/cluster/test_slurm.py submits it):
#   sbatch --nodes=1 --ntasks-per-node=2 --mem=4G --time=00:10:00 cluster/slurm_batch.sh ...
# OUTDIR (default: the submit directory) receives cb-JOBID.model, report-JOBID.json,
# scheduler-JOBID.json and tls-JOBID/. The train options default to the line below.
# Environment: RANDSVM_VENV (a venv to activate; else the environment sbatch exported from
# the submitting shell), DASK_INTERFACE (e.g. ib0; lo on a one-node test cluster),
# DASK_PORT (default 8786; 0: any free port), DASK_DASHBOARD_PORT (default 8787).
#SBATCH --job-name=randsvm
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=32
#SBATCH --cpus-per-task=1
#SBATCH --mem=120G
#SBATCH --time=02:00:00
#SBATCH --output=randsvm-%j.out
set -euo pipefail
TRAIN=$1
TEST=$2
OUT=${3:-$PWD}
shift $(( $# < 3 ? $# : 3 ))
OPTIONS=("$@")
[ ${#OPTIONS[@]} -gt 0 ] || OPTIONS=(--kernel rbf --C 100 --gamma 1 --gap-tol 0.001)
if [ -n "${RANDSVM_VENV:-}" ]; then source "$RANDSVM_VENV/bin/activate"; fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
SCHED_FILE=$OUT/scheduler-$SLURM_JOB_ID.json       # on the shared filesystem
IFACE=()   # workers: --interface; the scheduler: that interface's address (Dask's CLI
HOST=()    # refuses --interface with TLS files); none: the scheduler listens on all of them
if [ -n "${DASK_INTERFACE:-}" ]; then
    IFACE=(--interface "$DASK_INTERFACE")
    HOST=(--host "$(python -c "import sys; from distributed.utils import get_ip_interface
print(get_ip_interface(sys.argv[1]))" "$DASK_INTERFACE")")
fi

CERTS=$OUT/tls-$SLURM_JOB_ID                       # private: mode 0700, keys 0600
mkdir -m 700 "$CERTS"
python -m randsvm_dist.engine.tls "$CERTS" $(scontrol show hostnames "$SLURM_JOB_NODELIST")
TLS=(--tls-ca-file "$CERTS/ca.pem" --tls-cert "$CERTS/cert.pem" --tls-key "$CERTS/key.pem")

# TLS only; the dashboard on the first node's loopback (ssh -L 8787:localhost:8787 NODE)
dask scheduler --scheduler-file "$SCHED_FILE" --protocol tls --port "${DASK_PORT:-8786}" \
    --dashboard-address "127.0.0.1:${DASK_DASHBOARD_PORT:-8787}" "${HOST[@]}" \
    "${TLS[@]}" &
SCHEDULER=$!
while [ ! -f "$SCHED_FILE" ]; do kill -0 $SCHEDULER; sleep 1; done   # ends if it died
# one worker process per task (= per core), one thread each, the node's memory split
MEMORY=$(( ${SLURM_MEM_PER_NODE:-4096} / ${SLURM_NTASKS_PER_NODE:-1} ))MB
srun --ntasks="$SLURM_NTASKS" --cpus-per-task=1 \
    dask worker --scheduler-file "$SCHED_FILE" --nthreads 1 --memory-limit "$MEMORY" \
    --local-directory "${TMPDIR:-/tmp}" "${IFACE[@]}" "${TLS[@]}" &
ADDR=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['address'])" \
    "$SCHED_FILE")
# all workers in before the fit starts (its partitions are placed over them)
python -c "import sys; from distributed import Client, Security
Client(sys.argv[1], security=Security(tls_ca_file=sys.argv[3], tls_client_cert=sys.argv[4],
       tls_client_key=sys.argv[5], require_encryption=True)
       ).wait_for_workers(int(sys.argv[2]), timeout=600)" \
    "$ADDR" "$SLURM_NTASKS" "$CERTS/ca.pem" "$CERTS/cert.pem" "$CERTS/key.pem"

randsvm-dist train "$TRAIN" "${OPTIONS[@]}" --model "$OUT/cb-$SLURM_JOB_ID.model" \
    --test "$TEST" --report "$OUT/report-$SLURM_JOB_ID.json" --scheduler "$ADDR" "${TLS[@]}"
