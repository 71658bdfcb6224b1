#!/usr/bin/env bash
# LIBSVM's "A Practical Guide to Support Vector Classification" with randsvm-dist.
# Steps: unscaled default -> scaled default -> scaled and tuned (grid search, refit), each
# trained and evaluated on a held-out test set.
#
# Data: skin_nonskin (3 colour features in 0..255: unscaled, as the guide's examples) when
# ../shared/datasets is beside the clone (or SRC=FILE names a LIBSVM file); otherwise (or with
# SRC=a9a) the a9a sample committed in tests/data (3,000 training and 1,000 test rows), with
# a smaller grid.
# Output: a new scratch directory (printed), or ${OUT} when set; every step may be run
# again into the same OUT (it replaces only what it wrote there).
# About 1-3 minutes on 2 cores.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/randsvm-guide.XXXXXX")}
mkdir -p "$OUT"
echo "practical guide: writing into $OUT" >&2
SHARED_SKIN="$HERE/../../shared/datasets/skin_nonskin/skin_nonskin.svm.gz"
SRC=${SRC:-}                       # SRC=a9a: the committed sample even beside ../shared
if [ -z "$SRC" ] && [ -f "$SHARED_SKIN" ]; then SRC=$SHARED_SKIN; fi
if [ "$SRC" = a9a ]; then SRC=; fi
W=(--overwrite)

if [ -n "$SRC" ]; then
    TRAIN=${TRAIN:-4000}
    TEST=${TEST:-20000}
    GRID=(--C 2^-5..2^15 --gamma 2^3..2^-15 --folds 5 --fine-step 1)
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
for name, take in (("train", rows[:n_train]), ("test", rows[n_train:n_train + n_test])):
    write_arrays(X[take], y[take].astype(int), f"{out}/{name}", partitions=2, overwrite=True)
PY
else
    # 0. the committed a9a sample (123 binary features: the guide's steps, a smaller grid)
    GRID=(--C 2^-1..2^7:2 --gamma 2^-9..2^-3:2 --folds 3 --fine-step 1)
    randsvm-dist data convert "$HERE/../tests/data/a9a_train_3000.svm.gz" "$OUT/train" \
        --n-features 123 --partitions 2 --dense --no-progress "${W[@]}"
    randsvm-dist data convert "$HERE/../tests/data/a9a_test_1000.svm.gz" "$OUT/test" \
        --n-features 123 --partitions 1 --dense --no-progress "${W[@]}"
fi

# 1. unscaled, LIBSVM's defaults (C=1, gamma=1/#features)
randsvm-dist train "$OUT/train" --C 1 --gamma auto --k none --model "$OUT/unscaled.model" "${W[@]}"
randsvm-dist evaluate "$OUT/unscaled.model" "$OUT/test" --report "$OUT/unscaled.json" "${W[@]}"

# 2. scale like svm-scale: learn the range on the training set (-s), apply it to the test set (-r)
randsvm-dist data scale "$OUT/train" "$OUT/train.scale" --range "$OUT/range" "${W[@]}"
randsvm-dist data scale "$OUT/test" "$OUT/test.scale" --restore "$OUT/range" "${W[@]}"
randsvm-dist train "$OUT/train.scale" --C 1 --gamma auto --k none --model "$OUT/scaled.model" "${W[@]}"
randsvm-dist evaluate "$OUT/scaled.model" "$OUT/test.scale" --report "$OUT/scaled.json" "${W[@]}"

# 3. cross-validated grid search on the scaled training set (a coarse grid, then a finer one
#    around the best point), the best pair trained on all training rows
randsvm-dist grid "$OUT/train.scale" "${GRID[@]}" --out "$OUT/grid" --model "$OUT/tuned.model" \
    --report "$OUT/grid.json" "${W[@]}"
randsvm-dist evaluate "$OUT/tuned.model" "$OUT/test.scale" --report "$OUT/tuned.json" "${W[@]}"

python - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
acc = {k: json.load(open(f"{out}/{k}.json"))["accuracy"] for k in ("unscaled", "scaled", "tuned")}
best = json.load(open(f"{out}/grid.json"))["best"]
print(f"test accuracy: unscaled default {acc['unscaled']:.4f}, scaled default "
      f"{acc['scaled']:.4f}, scaled and tuned (C={best['C']:g}, gamma={best['gamma']:g}) "
      f"{acc['tuned']:.4f}")
PY
