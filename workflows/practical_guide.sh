#!/usr/bin/env bash
# LIBSVM's "A Practical Guide to Support Vector Classification" with randsvm-dist, on the
# skin_nonskin data set (3 colour features in 0..255: unscaled, as the guide's examples).
# Steps: unscaled default -> scaled default -> scaled and tuned (grid search, refit), each
# trained and evaluated on a held-out test set. Output goes to ${OUT:-./guide-out}.
# About 2-3 minutes on 2 cores with the default TRAIN=4000 rows.
set -euo pipefail
OUT=${OUT:-./guide-out}
TRAIN=${TRAIN:-4000}
TEST=${TEST:-20000}
SRC=${SRC:-$(dirname "$0")/../../shared/datasets/skin_nonskin/skin_nonskin.svm.gz}
rm -rf "$OUT"
mkdir -p "$OUT"

# 0. a seeded train/test split of the LIBSVM file, as Parquet
python - "$SRC" "$OUT" "$TRAIN" "$TEST" <<'PY'
import sys
import numpy as np
from sklearn.datasets import load_svmlight_file
from randsvm_dist.data import write_arrays
src, out, n_train, n_test = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
X, y = load_svmlight_file(src)
rows = np.random.default_rng(0).permutation(X.shape[0])
X = np.asarray(X.todense(), dtype=np.float32)
write_arrays(X[rows[:n_train]], y[rows[:n_train]].astype(int), f"{out}/train", partitions=2)
write_arrays(X[rows[n_train:n_train + n_test]], y[rows[n_train:n_train + n_test]].astype(int),
             f"{out}/test", partitions=2)
PY

# 1. unscaled, LIBSVM's defaults (C=1, gamma=1/#features)
randsvm-dist train "$OUT/train" --C 1 --gamma auto --k none --model "$OUT/unscaled.model"
randsvm-dist evaluate "$OUT/unscaled.model" "$OUT/test" --report "$OUT/unscaled.json"

# 2. scale like svm-scale: learn the range on the training set (-s), apply it to the test set (-r)
randsvm-dist data scale "$OUT/train" "$OUT/train.scale" --range "$OUT/range"
randsvm-dist data scale "$OUT/test" "$OUT/test.scale" --restore "$OUT/range"
randsvm-dist train "$OUT/train.scale" --C 1 --gamma auto --k none --model "$OUT/scaled.model"
randsvm-dist evaluate "$OUT/scaled.model" "$OUT/test.scale" --report "$OUT/scaled.json"

# 3. cross-validated grid search on the scaled training set (the guide's coarse grid, then a
#    finer one around the best point), the best pair trained on all training rows
randsvm-dist grid "$OUT/train.scale" --C 2^-5..2^15 --gamma 2^3..2^-15 --folds 5 \
    --fine-step 1 --out "$OUT/grid" --model "$OUT/tuned.model" --report "$OUT/grid.json"
randsvm-dist evaluate "$OUT/tuned.model" "$OUT/test.scale" --report "$OUT/tuned.json"

# the same model with the scaling inside it: train --scale on the raw rows, evaluate raw rows
python - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
acc = {k: json.load(open(f"{out}/{k}.json"))["accuracy"] for k in ("unscaled", "scaled", "tuned")}
best = json.load(open(f"{out}/grid.json"))["best"]
print(f"test accuracy: unscaled default {acc['unscaled']:.4f}, scaled default "
      f"{acc['scaled']:.4f}, scaled and tuned (C={best['C']:g}, gamma={best['gamma']:g}) "
      f"{acc['tuned']:.4f}")
PY
