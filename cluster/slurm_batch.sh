#!/bin/bash
# One SLURM allocation holds the whole run: a Dask scheduler and this driver on the first
# task's node, one single-threaded worker per allocated core via srun, then randsvm-dist.
# Every connection is TLS with a CA and certificate made for this job only (in a private
# directory on the shared filesystem): other users of the nodes cannot connect.
#   sbatch cluster/slurm_batch.sh /scratch/$USER/cb-train /scratch/$USER/cb-test
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
source /path/to/venv/bin/activate                 # same environment on every node
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
SCHED_FILE=$PWD/scheduler-$SLURM_JOB_ID.json       # on the shared filesystem

CERTS=$PWD/tls-$SLURM_JOB_ID                       # private: mode 0700, keys 0600
mkdir -m 700 "$CERTS"
python -m randsvm_dist.engine.tls "$CERTS" $(scontrol show hostnames "$SLURM_JOB_NODELIST")
TLS=(--tls-ca-file "$CERTS/ca.pem" --tls-cert "$CERTS/cert.pem" --tls-key "$CERTS/key.pem")

# TLS only; the dashboard on the first node's loopback (ssh -L 8787:localhost:8787 NODE)
dask scheduler --scheduler-file "$SCHED_FILE" --protocol tls --port 8786 \
    --dashboard-address 127.0.0.1:8787 "${TLS[@]}" &
while [ ! -f "$SCHED_FILE" ]; do sleep 1; done
# one worker process per task (= per core), one thread each, memory split per core
srun --ntasks="$SLURM_NTASKS" --cpus-per-task=1 \
    dask worker --scheduler-file "$SCHED_FILE" --nthreads 1 --memory-limit 3.5GB \
    --local-directory "${TMPDIR:-/tmp}" "${TLS[@]}" &
ADDR=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['address'])" \
    "$SCHED_FILE")

randsvm-dist train "$TRAIN" --kernel rbf --C 100 --gamma 1 --gap-tol 0.001 \
    --model "cb-$SLURM_JOB_ID.model" --test "$TEST" --report "report-$SLURM_JOB_ID.json" \
    --scheduler "$ADDR" "${TLS[@]}"
