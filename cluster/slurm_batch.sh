#!/bin/bash
# One SLURM allocation holds the whole run: a Dask scheduler and this driver on the first
# task's node, one single-threaded worker per allocated core via srun, then randsvm-dist.
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

dask scheduler --scheduler-file "$SCHED_FILE" --port 8786 &
while [ ! -f "$SCHED_FILE" ]; do sleep 1; done
# one worker process per task (= per core), one thread each, memory split per core
srun --ntasks="$SLURM_NTASKS" --cpus-per-task=1 \
    dask worker --scheduler-file "$SCHED_FILE" --nthreads 1 --memory-limit 3.5GB \
    --local-directory "${TMPDIR:-/tmp}" &
ADDR=$(python -c "import json, sys; print(json.load(open(sys.argv[1]))['address'])" \
    "$SCHED_FILE")

randsvm-dist train "$TRAIN" --kernel rbf --C 100 --gamma 1 --gap-tol 0.001 \
    --model "cb-$SLURM_JOB_ID.model" --test "$TEST" --json "report-$SLURM_JOB_ID.json" \
    --scheduler "$ADDR"
