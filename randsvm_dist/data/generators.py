"""Synthetic data sets of the seed papers, reproducible at any size and any partitioning.

Each generator defines an infinite stream of rows cut into fixed blocks of ``BLOCK_ROWS``
rows; block ``b`` is drawn from ``numpy.random.default_rng(SeedSequence([seed, b]))``. Rows
``[start, start + n)`` are therefore the same whatever the chunking: same seed, same rows,
whatever the partition count. Binary sets are labelled -1/+1 (int64).

Sets (d = number of features):

=====================  ==  ===================================================================
twonorm                20  N(+a·1, I) for +1 vs N(-a·1, I) for -1, a = 2/sqrt(20) (Breiman)
ringnorm               20  +1: N(0, 4I); -1: N(a·1, I), a = 2/sqrt(20) (as specified for this
                           project; Breiman's/DELVE's original uses a = 1/sqrt(20))
checkerboard            2  uniform on [0,4)^2, 4x4 board: +1 when floor(x1)+floor(x2) is even
noisy_checkerboard      2  the same points, 15% of labels flipped (independently per row)
gauss                   2  Haykin's two overlapping Gaussians (the "Gauss" set of the online
                           ramp-loss SVM paper, its ref. [10]): +1: N((0,0), I);
                           -1: N((2,0), 4I); Bayes accuracy about 81.5%
waveform               21  Breiman's waveform: classes 0, 1, 2 (UCI numbering); each row is
                           u·h_i + (1-u)·h_j + N(0, I) with u ~ U(0,1) and triangular waves
waveform_binary        21  the same rows; class 0 -> -1, classes 1 and 2 -> +1 (as in the
                           ramp-loss paper: "class 1 negative, the other two positive")
clusters2/3/5        2/3/5 two unit-variance Gaussian clusters at ±m·u (u = 1·/sqrt(d)),
                           m = Phi^-1(0.85), so the Bayes (linear) accuracy is 85%: the
                           "about 85% separable" normal clusters of StreamSVM's Synthetic A-C
friedman1              10  regression (Friedman 1991, as sklearn's make_friedman1): x ~ U[0,1]^10,
                           y = 10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5 + noise·N(0,1)
                           (x6..x10 are irrelevant); float64 targets; ``noise`` (sigma)
                           defaults to 1.0
blobs_with_outliers     4  one-class data with known outliers: label 1 (normal): one of three
                           Gaussian blobs N(c_k, 0.5² I) at fixed centres; label -1 (outlier):
                           uniform on [-6, 6]^4, a fraction ``outlier_fraction`` (default 0.05)
                           of the rows, each row independently
=====================  ==  ===================================================================

Every classification generator labels each row from its own draw (no fixed class
proportions per block), so the class balance is about 1/2 (1/3 for waveform). Generators
with parameters (``noise``, ``outlier_fraction``) take them as keywords of ``make_arrays``
and ``make`` (``data make --noise / --outlier-fraction``); the features of a row never
depend on them, only its target or label does (friedman1) or which rows are outliers.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from randsvm_dist.core.progress import progress_bar
from randsvm_dist.exceptions import ParameterError

BLOCK_ROWS = 16384


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator: ``draw(rng, n, **params) -> (X float32 (n, d), y)``.

    Attributes:
        classes: the labels (empty for regression: float64 targets).
        task: 'classification', 'regression' or 'one_class' (labels 1 normal, -1 outlier).
        params: the generator's keyword parameters and their defaults.
    """

    name: str
    n_features: int
    classes: tuple
    draw: Callable[..., tuple[np.ndarray, np.ndarray]]
    description: str
    task: str = "classification"
    params: tuple = ()   # ((name, default), ...)

    def resolve(self, params: dict | None) -> dict:
        """The generator's parameters: defaults updated by ``params``.

        Raises:
            ParameterError: a parameter this generator does not take, or a bad value.
        """
        out = dict(self.params)
        for k, v in (params or {}).items():
            if v is None:
                continue
            if k not in out:
                raise ParameterError(f"generator {self.name!r} takes no parameter {k!r}"
                                     + (f"; it takes {', '.join(out)}" if out else ""))
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ParameterError(f"{k} must be a number; got {v!r}") from None
            if not np.isfinite(v) or v < 0 or (k == "outlier_fraction" and v > 1):
                raise ParameterError(f"{k} must be a finite number >= 0"
                                     + (" and <= 1" if k == "outlier_fraction" else "")
                                     + f"; got {v!r}")
            out[k] = v
        return out


def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2, size=n, dtype=np.int64) * 2 - 1


def _twonorm(rng, n):
    a = np.float32(2.0 / np.sqrt(20.0))
    y = _signs(rng, n)
    X = rng.standard_normal((n, 20), dtype=np.float32)
    X += (a * y.astype(np.float32))[:, None]
    return X, y


def _ringnorm(rng, n):
    a = np.float32(2.0 / np.sqrt(20.0))
    y = _signs(rng, n)
    X = rng.standard_normal((n, 20), dtype=np.float32)
    pos = y > 0
    X *= np.where(pos, np.float32(2.0), np.float32(1.0))[:, None]
    X += np.where(pos, np.float32(0.0), a)[:, None]
    return X, y


def _checkerboard_clean(rng, n):
    X = rng.random((n, 2), dtype=np.float32) * np.float32(4.0)
    cell = np.floor(X).astype(np.int64).sum(axis=1)
    y = np.where(cell % 2 == 0, 1, -1).astype(np.int64)
    return X, y


def _noisy_checkerboard(rng, n):
    X, y = _checkerboard_clean(rng, n)
    flip = rng.random(n) < 0.15
    y[flip] = -y[flip]
    return X, y


def _gauss(rng, n):
    y = _signs(rng, n)
    X = rng.standard_normal((n, 2), dtype=np.float32)
    neg = y < 0
    X[neg] *= np.float32(2.0)
    X[neg, 0] += np.float32(2.0)
    return X, y


_T = np.arange(1, 22)
_H1 = np.maximum(6 - np.abs(_T - 11), 0).astype(np.float32)
_H2 = np.maximum(6 - np.abs(_T - 15), 0).astype(np.float32)  # h1 shifted right by 4
_H3 = np.maximum(6 - np.abs(_T - 7), 0).astype(np.float32)   # h1 shifted left by 4
# Breiman's classes: 0 mixes (h1, h2), 1 mixes (h1, h3), 2 mixes (h2, h3).
_WAVE_A = np.stack([_H1, _H1, _H2])
_WAVE_B = np.stack([_H2, _H3, _H3])


def _curved16(rng, n):
    """Two 16-D Gaussian classes split by a curved surface with a margin, so the support
    vectors stay few (thousands) however many rows are drawn."""
    X = rng.standard_normal((n, 16), dtype=np.float32)
    side = X[:, 0] + np.float32(0.35) * (X[:, 1] * X[:, 1] - np.float32(1.0))
    y = np.where(side >= 0, 1, -1).astype(np.int64)
    X[:, 0] += np.float32(0.4) * y   # the gap: no row within 0.4 of the surface
    return X, y


def _waveform(rng, n):
    y = rng.integers(0, 3, size=n, dtype=np.int64)
    u = rng.random(n, dtype=np.float32)[:, None]
    X = rng.standard_normal((n, 21), dtype=np.float32)
    X += u * _WAVE_A[y] + (np.float32(1.0) - u) * _WAVE_B[y]
    return X, y


def _waveform_binary(rng, n):
    X, y = _waveform(rng, n)
    return X, np.where(y == 0, -1, 1).astype(np.int64)


def _clusters(d: int):
    m = np.float32(statistics.NormalDist().inv_cdf(0.85))
    u = np.full(d, 1.0 / np.sqrt(d), dtype=np.float32)

    def draw(rng, n):
        y = _signs(rng, n)
        X = rng.standard_normal((n, d), dtype=np.float32)
        X += (m * y.astype(np.float32))[:, None] * u
        return X, y

    return draw


def _friedman1(rng, n, noise: float = 1.0):
    X = rng.random((n, 10)).astype(np.float32).astype(np.float64)  # y from stored features
    y = (10.0 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20.0 * (X[:, 2] - 0.5) ** 2
         + 10.0 * X[:, 3] + 5.0 * X[:, 4])
    y += noise * rng.standard_normal(n)   # drawn whatever the noise: X never depends on it
    return X.astype(np.float32), y


_BLOB_CENTRES = np.array([[-2.0, -2.0, 0.0, 0.0], [2.0, -1.0, 1.0, -1.0],
                          [0.0, 2.5, -1.0, 1.0]], dtype=np.float32)


def _blobs_with_outliers(rng, n, outlier_fraction: float = 0.05):
    u = rng.random(n)                               # who is an outlier
    k = rng.integers(0, len(_BLOB_CENTRES), size=n)
    X = _BLOB_CENTRES[k] + np.float32(0.5) * rng.standard_normal((n, 4), dtype=np.float32)
    far = rng.uniform(-6.0, 6.0, (n, 4)).astype(np.float32)
    out = u < outlier_fraction
    X[out] = far[out]
    return np.ascontiguousarray(X), np.where(out, -1, 1).astype(np.int64)


GENERATORS: dict[str, GeneratorSpec] = {
    s.name: s for s in [
        GeneratorSpec("twonorm", 20, (-1, 1), _twonorm,
                      "Breiman's twonorm, 20-D, N(±a·1, I), a=2/sqrt(20)"),
        GeneratorSpec("ringnorm", 20, (-1, 1), _ringnorm,
                      "ringnorm, 20-D, N(0,4I) vs N(a·1,I), a=2/sqrt(20)"),
        GeneratorSpec("checkerboard", 2, (-1, 1), _checkerboard_clean,
                      "4x4 checkerboard on [0,4)^2"),
        GeneratorSpec("noisy_checkerboard", 2, (-1, 1), _noisy_checkerboard,
                      "4x4 checkerboard with 15% label flips"),
        GeneratorSpec("gauss", 2, (-1, 1), _gauss,
                      "two overlapping 2-D Gaussians (Haykin): N(0,I) vs N((2,0),4I)"),
        GeneratorSpec("curved16", 16, (-1, 1), _curved16,
                      "two 16-D Gaussians split by a curved surface with a margin of 0.8"),
        GeneratorSpec("waveform", 21, (0, 1, 2), _waveform,
                      "Breiman's waveform, 21-D, 3 classes"),
        GeneratorSpec("waveform_binary", 21, (-1, 1), _waveform_binary,
                      "waveform, class 0 vs classes 1+2"),
        GeneratorSpec("clusters2", 2, (-1, 1), _clusters(2),
                      "two 2-D Gaussian clusters, 85% separable"),
        GeneratorSpec("clusters3", 3, (-1, 1), _clusters(3),
                      "two 3-D Gaussian clusters, 85% separable"),
        GeneratorSpec("clusters5", 5, (-1, 1), _clusters(5),
                      "two 5-D Gaussian clusters, 85% separable"),
        GeneratorSpec("friedman1", 10, (), _friedman1,
                      "Friedman #1 regression, 10-D (5 relevant), Gaussian noise sigma",
                      task="regression", params=(("noise", 1.0),)),
        GeneratorSpec("blobs_with_outliers", 4, (-1, 1), _blobs_with_outliers,
                      "three 4-D Gaussian blobs (label 1) and uniform outliers (label -1)",
                      task="one_class", params=(("outlier_fraction", 0.05),)),
    ]
}


def get_generator(name: str) -> GeneratorSpec:
    """The registered generator ``name``.

    Raises:
        ParameterError: unknown name (the message lists the known ones).
    """
    key = str(name).lower().replace("-", "_")
    if key not in GENERATORS:
        raise ParameterError(f"unknown generator {name!r}; choose one of "
                             f"{', '.join(sorted(GENERATORS))}")
    return GENERATORS[key]


def _check_seed(seed) -> int:
    try:
        s = int(seed)
    except (TypeError, ValueError):
        raise ParameterError(f"seed must be a non-negative integer; got {seed!r}") from None
    if s != seed or s < 0:
        raise ParameterError(f"seed must be a non-negative integer; got {seed!r}")
    return s


def make_arrays(name: str, n_rows: int, seed: int = 0, start: int = 0, **params):
    """Rows ``[start, start + n_rows)`` of generator ``name``'s stream for ``seed``.

    Args:
        name: a key of :data:`GENERATORS`.
        n_rows: how many rows (>= 0).
        seed: non-negative integer.
        start: index of the first row in the stream.
        params: the generator's parameters (friedman1: ``noise``; blobs_with_outliers:
            ``outlier_fraction``); None keeps a default.

    Returns:
        ``(X, y)``: X float32 C-contiguous (n_rows, d), y int64 labels (float64 targets for
        regression). Identical rows for the same (name, seed, row index, params) whatever
        the chunking.

    Raises:
        ParameterError: unknown name or parameter, negative n_rows/start, bad seed.
    """
    spec = get_generator(name)
    seed = _check_seed(seed)
    kw = spec.resolve(params)
    n_rows, start = int(n_rows), int(start)
    if n_rows < 0 or start < 0:
        raise ParameterError(f"n_rows and start must be >= 0; got {n_rows}, {start}")
    X = np.empty((n_rows, spec.n_features), dtype=np.float32)
    y = np.empty(n_rows, dtype=np.float64 if spec.task == "regression" else np.int64)
    if n_rows == 0:
        return X, y
    stop = start + n_rows
    for b in range(start // BLOCK_ROWS, (stop - 1) // BLOCK_ROWS + 1):
        rng = np.random.default_rng(np.random.SeedSequence([seed, b]))
        Xb, yb = spec.draw(rng, BLOCK_ROWS, **kw)
        b0 = b * BLOCK_ROWS
        lo, hi = max(start, b0), min(stop, b0 + BLOCK_ROWS)
        X[lo - start:hi - start] = Xb[lo - b0:hi - b0]
        y[lo - start:hi - start] = yb[lo - b0:hi - b0]
    return X, y


def make(name: str, dst: str | os.PathLike, rows: int, partitions: int | None = None,
         seed: int = 0, *, rows_per_partition: int | None = None, overwrite: bool = False,
         progress: bool = False, **params):
    """Generate ``rows`` rows of set ``name`` into a Parquet directory, one partition at a time.

    Memory stays at about one partition's rows.

    Args:
        name: generator name (see :data:`GENERATORS`).
        dst: output directory or URL; must not exist unless overwrite.
        rows: total rows (> 0).
        partitions / rows_per_partition: the split (see ``partition_sizes``).
        seed: non-negative integer; the rows do not depend on the split.
        overwrite: replace an existing ``dst``.
        progress: show a tqdm progress bar.
        params: the generator's parameters (see ``make_arrays``), recorded in the metadata.

    Returns:
        The written Dataset (a float64 label column for regression generators).

    Raises:
        ParameterError: bad name, sizes or seed.
        DataFormatError: ``dst`` exists.
    """
    spec = get_generator(name)
    seed = _check_seed(seed)
    if int(rows) != rows or rows < 1:
        raise ParameterError(f"rows must be a positive integer; got {rows!r}")
    from randsvm_dist.data.writer import PartitionWriter, partition_sizes  # lazy: --help

    sizes = partition_sizes(int(rows), partitions, rows_per_partition)
    kw = spec.resolve(params)
    meta = {"generator": spec.name, "seed": seed, **kw}
    bar = progress_bar(int(rows), f"make {spec.name}", progress)
    try:
        with PartitionWriter(dst, overwrite=overwrite) as w:
            start = 0
            for size in sizes:
                X, y = make_arrays(spec.name, size, seed, start, **kw)
                w.write(X, y, n_features=spec.n_features, extra_meta=meta)
                start += size
                bar.update(size)
            return w.close()
    finally:
        bar.close()
