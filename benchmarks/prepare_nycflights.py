"""nycflights13 as a regression benchmark: predict a flight's ``air_time`` (minutes).

Reads ``../shared/datasets/nycflights13/flights.csv.gz`` (336,776 flights) and
``weather.csv.gz`` (hourly weather at the three origins), joined on (origin, time_hour),
and writes Parquet train/test sets (float64 label column) with ``randsvm_dist.data``.

Why ``air_time``: it is mostly distance and route with smooth seasonal and wind effects, so
an RBF epsilon-SVR fits it well (``arr_delay`` is dominated by heavy-tailed delays that no
feature here explains). Rows with no ``air_time`` (cancelled or diverted flights: NA, 9,430
rows) are dropped and counted, never coerced.

Features (all standardized with the training split's mean and standard deviation, so one
gamma fits every column; 34 in all):

* schedule: scheduled departure hour and minute, month, day of week (0 = Monday);
* ``distance`` (miles);
* ``carrier`` (16) and ``origin`` (3): one-hot;
* ``dest`` (105 airports): target-encoded: the mean ``air_time`` of the destination over the
  *training* rows (smoothed towards the global mean by 20 pseudo-rows; a destination not
  seen in training gets the global mean), so the test rows never inform it;
* weather at the origin at the scheduled hour: temp, dewp, humid, wind speed, wind
  direction as sin/cos (0 when calm or missing), precip, pressure, visib; a missing value
  becomes the training median (the join leaves 1,544 flights without a weather row).

The split is a seeded random 80/20 of the kept rows. ``--sample N`` also writes a training
sample of N rows (for ``randsvm-dist grid``).

    python benchmarks/prepare_nycflights.py --out /tmp/randsvm-bench/nycflights
    # -> OUT/train, OUT/test, OUT/train-sample (with --sample), OUT/summary.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RANDSVM_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
TARGET = "air_time"
WEATHER = ["temp", "dewp", "humid", "wind_speed", "precip", "pressure", "visib"]
DEST_SMOOTHING = 20.0


def load_frames(src: Path):
    """(flights, weather) DataFrames with NA as missing.

    Raises:
        FileNotFoundError: the CSV files are not there.
    """
    import pandas as pd

    flights = pd.read_csv(src / "flights.csv.gz", na_values=["NA"])
    weather = pd.read_csv(src / "weather.csv.gz", na_values=["NA"])
    return flights, weather


def build(flights, weather, seed: int = 0, test_share: float = 0.2) -> dict:
    """Features and targets of the kept rows, split into train/test.

    Args:
        flights, weather: the two tables as read by ``load_frames``.
        seed: seed of the split.
        test_share: share of the kept rows in the test split.

    Returns:
        {"X_train", "y_train", "X_test", "y_test" (float32 / float64 arrays),
         "arr_delay_train", "arr_delay_test" (the same rows' arrival delays, minutes: the
         binary "delayed" task's source, ``bench_engines.py``), "features" (names), "rows",
         "dropped_no_target", "no_weather"}.
    """
    import pandas as pd

    n_all = len(flights)
    keep = flights[TARGET].notna()
    dropped = int((~keep).sum())
    f = flights[keep].reset_index(drop=True)
    w = weather.drop_duplicates(["origin", "time_hour"])
    f = f.merge(w[["origin", "time_hour", "wind_dir", *WEATHER]], on=["origin", "time_hour"],
                how="left")
    no_weather = int(f["temp"].isna().sum())
    rng = np.random.default_rng(seed)
    test = np.zeros(len(f), bool)
    test[rng.permutation(len(f))[: int(round(test_share * len(f)))]] = True

    cols: dict[str, np.ndarray] = {}
    cols["sched_hour"] = (f["sched_dep_time"] // 100).to_numpy(float)
    cols["sched_minute"] = (f["sched_dep_time"] % 100).to_numpy(float)
    cols["month"] = f["month"].to_numpy(float)
    cols["day_of_week"] = pd.to_datetime(dict(year=f["year"], month=f["month"],
                                              day=f["day"])).dt.day_of_week.to_numpy(float)
    cols["distance"] = f["distance"].to_numpy(float)
    for c in sorted(f["carrier"].unique()):
        cols[f"carrier_{c}"] = (f["carrier"] == c).to_numpy(float)
    for c in sorted(f["origin"].unique()):
        cols[f"origin_{c}"] = (f["origin"] == c).to_numpy(float)
    y = f[TARGET].to_numpy(np.float64)
    delay = f["arr_delay"].to_numpy(np.float64)  # known wherever air_time is
    glob = y[~test].mean()
    stats = pd.DataFrame({"dest": f["dest"][~test], "y": y[~test]}).groupby("dest")["y"]
    enc = (stats.sum() + DEST_SMOOTHING * glob) / (stats.count() + DEST_SMOOTHING)
    cols["dest_mean_air_time"] = f["dest"].map(enc).fillna(glob).to_numpy(float)
    for c in WEATHER:
        v = f[c].to_numpy(float)
        cols[c] = np.where(np.isnan(v), np.nanmedian(v[~test]), v)
    rad = np.deg2rad(f["wind_dir"].to_numpy(float))
    calm = np.isnan(rad) | (f["wind_speed"].fillna(0).to_numpy(float) == 0)
    cols["wind_dir_sin"] = np.where(calm, 0.0, np.sin(np.nan_to_num(rad)))
    cols["wind_dir_cos"] = np.where(calm, 0.0, np.cos(np.nan_to_num(rad)))

    names = list(cols)
    X = np.column_stack([cols[n] for n in names])
    mu, sd = X[~test].mean(axis=0), X[~test].std(axis=0)
    X = ((X - mu) / np.where(sd > 0, sd, 1.0)).astype(np.float32)
    return {"X_train": X[~test], "y_train": y[~test], "X_test": X[test], "y_test": y[test],
            "arr_delay_train": delay[~test], "arr_delay_test": delay[test],
            "features": names, "rows": n_all, "kept": int(len(f)),
            "dropped_no_target": dropped, "no_weather": no_weather}


def main(argv=None) -> int:
    """Write OUT/train, OUT/test (and OUT/train-sample) and OUT/summary.json."""
    from randsvm_dist.data import write_arrays

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default=str(SHARED / "nycflights13"))
    p.add_argument("--out", default="/tmp/randsvm-bench/nycflights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--sample", type=int, default=20_000,
                   help="rows of OUT/train-sample (0: none), for the grid search")
    p.add_argument("--overwrite", action="store_true")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    data = build(*load_frames(Path(args.src)), seed=args.seed)
    out = Path(args.out)
    write_arrays(data["X_train"], data["y_train"], out / "train", partitions=args.partitions,
                 overwrite=args.overwrite)
    write_arrays(data["X_test"], data["y_test"], out / "test", partitions=2,
                 overwrite=args.overwrite)
    if args.sample:
        take = np.random.default_rng(args.seed + 1).permutation(len(data["y_train"]))
        take = np.sort(take[: args.sample])
        write_arrays(data["X_train"][take], data["y_train"][take], out / "train-sample",
                     partitions=2, overwrite=args.overwrite)
    summary = {k: data[k] for k in ("rows", "kept", "dropped_no_target", "no_weather",
                                    "features")}
    summary.update(target=TARGET, train_rows=int(len(data["y_train"])),
                   test_rows=int(len(data["y_test"])), sample_rows=int(args.sample),
                   target_mean=float(data["y_train"].mean()),
                   target_std=float(data["y_train"].std()), seed=args.seed,
                   seconds=time.perf_counter() - t0)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"nycflights13: {summary['rows']:,} flights, dropped {summary['dropped_no_target']:,} "
          f"with no {TARGET}, {summary['no_weather']:,} without a weather row (medians); "
          f"train {summary['train_rows']:,} / test {summary['test_rows']:,} rows x "
          f"{len(summary['features'])} features -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
