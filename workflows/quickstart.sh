#!/usr/bin/env bash
# The main job on the embedded default (local worker processes, one per core):
# generate a 4x4 checkerboard (200,000 training rows, 20,000 test rows) as Parquet,
# train an RBF SVM with RandSVM (LIBSVM solves, violator scans on the workers),
# evaluate it on the test set, predict the test set to Parquet, and draw the history.
# About a minute on 2 cores. Output goes to ${OUT:-./quickstart-out}.
set -euo pipefail
OUT=${OUT:-./quickstart-out}
ROWS=${ROWS:-200000}
rm -rf "$OUT"
mkdir -p "$OUT"
randsvm-dist data make checkerboard "$OUT/train" --rows "$ROWS" --partitions 8 --seed 1 --no-progress
randsvm-dist data make checkerboard "$OUT/test" --rows 20000 --partitions 2 --seed 2 --no-progress
randsvm-dist data info "$OUT/train"
randsvm-dist train "$OUT/train" --kernel rbf --C 100 --gamma 1 --gap-tol 0.001 \
    --model "$OUT/checkerboard.model" --test "$OUT/test" --report "$OUT/train-report.json"
randsvm-dist evaluate "$OUT/checkerboard.model" "$OUT/test"
randsvm-dist predict "$OUT/checkerboard.model" "$OUT/test" "$OUT/predictions"
randsvm-dist report "$OUT/train-report.json"    # the training history as $OUT/train-report.png
