"""Filesystem helpers: resolve a local path or URL, and publish output atomically.

Local paths use pyarrow's LocalFileSystem; URLs use pyarrow's own filesystems when it knows
the scheme (``s3://``, ``gs://``, ``hdfs://``, ``file://``) and fsspec otherwise
(``memory://``, ``abfs://``, ...). Both kinds pickle, so a Dataset can be shipped to workers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path

import pyarrow.fs as pafs

from randsvm_dist.exceptions import DataFormatError


def is_url(path: str | os.PathLike) -> bool:
    """True when ``path`` is a URL with a scheme (``s3://...``), False for a local path."""
    return "://" in str(path)


def resolve(path_or_url: str | os.PathLike):
    """Return ``(filesystem, path)`` for a local path or filesystem URL.

    Raises:
        DataFormatError: the URL's scheme is known to neither pyarrow nor fsspec.
    """
    s = str(path_or_url)
    if not is_url(s):
        return pafs.LocalFileSystem(), str(Path(s).expanduser().resolve())
    try:
        return pafs.FileSystem.from_uri(s)
    except Exception:  # unknown to pyarrow: try fsspec (memory://, abfs://, ...)
        pass
    try:
        import fsspec.core

        fs, p = fsspec.core.url_to_fs(s)
    except Exception as e:  # noqa: BLE001 - any failure means "cannot open this URL"
        raise DataFormatError(f"cannot open {s}: {e}") from None
    return fs, p


def is_pyarrow_fs(fs) -> bool:
    """True for a pyarrow filesystem, False for an fsspec one."""
    return isinstance(fs, pafs.FileSystem)


def list_files(fs, path: str, suffix: str = ".parquet") -> list[str] | None:
    """Sorted paths of the files ending in ``suffix`` directly under directory ``path``.

    Returns None when ``path`` is not a directory (it may be a single file, or missing).
    """
    if is_pyarrow_fs(fs):
        info = fs.get_file_info(path)
        if info.type != pafs.FileType.Directory:
            return None
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
        names = [i.path for i in infos if i.type == pafs.FileType.File]
    else:
        if not fs.isdir(path):
            return None
        names = [p for p in fs.ls(path, detail=False)]
    return sorted(n for n in names if n.endswith(suffix)
                  and not os.path.basename(n).startswith(("_", ".")))


def file_exists(fs, path: str) -> bool:
    """True when ``path`` is an existing file on ``fs``."""
    if is_pyarrow_fs(fs):
        return fs.get_file_info(path).type == pafs.FileType.File
    return fs.isfile(path)


def file_size(fs, path: str) -> int:
    """Size of file ``path`` in bytes."""
    if is_pyarrow_fs(fs):
        return int(fs.get_file_info(path).size)
    return int(fs.size(path))


MANIFEST = "_manifest.json"
MANIFEST_FORMAT = "randsvm-dist-manifest/1"
_OUR_NAME = re.compile(r"part-\d+\.parquet$")


def read_manifest(fs, root: str) -> dict | None:
    """The completion manifest of output directory ``root``, or None when it has none.

    Raises:
        DataFormatError: the manifest exists but is not ours or is malformed.
    """
    path = f"{root.rstrip('/')}/{MANIFEST}"
    if not file_exists(fs, path):
        return None
    try:
        if is_pyarrow_fs(fs):
            with fs.open_input_stream(path) as f:
                raw = f.read()
        else:
            raw = fs.cat_file(path)
        manifest = json.loads(raw)
        ok = (manifest.get("format") == MANIFEST_FORMAT
              and all(isinstance(e["name"], str) and "/" not in e["name"]
                      and isinstance(e["bytes"], int) for e in manifest["files"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise DataFormatError(f"{path}: not a valid randsvm-dist manifest")
    return manifest


def manifest_paths(fs, root: str, manifest: dict, where: str) -> list[str]:
    """The files a manifest lists, checked to be present with the recorded sizes.

    Raises:
        DataFormatError: a listed file is missing or has another size (the output was
            changed or damaged after it was published).
    """
    out = []
    for entry in manifest["files"]:
        path = f"{root.rstrip('/')}/{entry['name']}"
        if not file_exists(fs, path) or file_size(fs, path) != entry["bytes"]:
            raise DataFormatError(f"{where}: {entry['name']} is missing or has changed since "
                                  f"the output was published ({MANIFEST} lists "
                                  f"{entry['bytes']} bytes); write the output again")
        out.append(path)
    return out


def _listing(fs, path: str) -> list[tuple[str, bool, int]]:
    """(name, is a file, bytes) of every entry directly under directory ``path``."""
    if is_pyarrow_fs(fs):
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
        return [(os.path.basename(i.path), i.type == pafs.FileType.File, int(i.size or 0))
                for i in infos]
    return [(os.path.basename(e["name"].rstrip("/")), e.get("type") == "file",
             int(e.get("size") or 0)) for e in fs.ls(path, detail=True)]


def _check_replaceable(fs, path: str, overwrite: bool, shown: str) -> None:
    """Refuse an existing output unless ``overwrite`` and it is one this project wrote
    (it has our manifest, or, written before manifests, only ``part-N.parquet`` files)."""
    if is_pyarrow_fs(fs):
        kind = fs.get_file_info(path).type
        exists, is_dir = kind != pafs.FileType.NotFound, kind == pafs.FileType.Directory
    else:
        exists, is_dir = fs.exists(path), fs.isdir(path)
    if not exists:
        return
    if not is_dir:
        raise DataFormatError(f"output {shown} exists and is a file, not an output directory")
    entries = _listing(fs, path)
    if not entries:
        return
    if not overwrite:
        raise DataFormatError(f"output {shown} already exists; choose a new path or pass "
                              "--overwrite (overwrite=True)")
    legacy = all(is_file and _OUR_NAME.match(n) for n, is_file, _ in entries)
    if not legacy and read_manifest(fs, path) is None:
        raise DataFormatError(f"output {shown} was not written by randsvm-dist (no "
                              f"{MANIFEST}); --overwrite replaces only outputs this project "
                              "wrote, so remove it yourself if it should go")


def check_output_dir(path_or_url: str | os.PathLike, overwrite: bool = False) -> None:
    """Fail early (before any work) if output directory ``path_or_url`` may not be written.

    Raises:
        DataFormatError: it exists and ``overwrite`` is False, it is a file, or it was not
            written by randsvm-dist.
    """
    fs, path = resolve(path_or_url) if is_url(path_or_url) else (
        pafs.LocalFileSystem(), str(Path(path_or_url).expanduser().resolve()))
    _check_replaceable(fs, path, overwrite, str(path_or_url))


class AtomicDir:
    """A temporary output directory that becomes ``dst`` only when committed.

    Files are written under a sibling ``.<name>.tmp-<id>``. ``commit()`` writes the
    completion manifest (``_manifest.json``: every file with its size) and publishes: a
    local directory is renamed into place in one step; on fsspec URLs the files are moved
    and the manifest is written last, so a reader (which requires the manifest) never takes
    an interrupted write for a complete one. ``abort()`` (or leaving a ``with`` block on an
    exception) deletes the temporary directory.

    Raises:
        DataFormatError: ``dst`` exists and ``overwrite`` is False, or ``dst`` is not an
            output this project wrote.
    """

    def __init__(self, dst: str | os.PathLike, overwrite: bool = False):
        self.dst_str = str(dst)
        self.overwrite = overwrite
        self.local = not is_url(dst)
        if self.local:
            self.dst = Path(dst).expanduser().resolve()
            self.fs = pafs.LocalFileSystem()
            _check_replaceable(self.fs, str(self.dst), overwrite, str(self.dst))
            self.dst.parent.mkdir(parents=True, exist_ok=True)
            self.tmp = self.dst.parent / f".{self.dst.name}.tmp-{uuid.uuid4().hex[:8]}"
            self.tmp.mkdir()
            self.tmp_path = str(self.tmp)
        else:
            import fsspec.core

            self.fs, self.dst_path = fsspec.core.url_to_fs(self.dst_str)
            _check_replaceable(self.fs, self.dst_path, overwrite, self.dst_str)
            base = self.dst_path.rstrip("/")
            self.tmp_path = f"{base}.tmp-{uuid.uuid4().hex[:8]}"
            self.fs.makedirs(self.tmp_path, exist_ok=True)
        self.done = False

    def path(self, name: str) -> str:
        """Path of file ``name`` inside the temporary directory."""
        return f"{self.tmp_path}/{name}"

    def _manifest(self) -> bytes:
        files = sorted((n, b) for n, is_file, b in _listing(self.fs, self.tmp_path)
                       if is_file and n != MANIFEST)
        return json.dumps({"format": MANIFEST_FORMAT, "written_at": time.time(),
                           "files": [{"name": n, "bytes": b} for n, b in files]},
                          indent=1).encode()

    def commit(self) -> str:
        """Publish the finished directory at ``dst`` with its manifest; returns ``dst``."""
        manifest = self._manifest()
        if self.local:
            (self.tmp / MANIFEST).write_bytes(manifest)
            if self.dst.exists():
                old = self.dst.parent / f".{self.dst.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(self.dst, old)
                os.replace(self.tmp, self.dst)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(self.tmp, self.dst)
        else:
            if self.fs.exists(self.dst_path):
                try:  # first un-publish: a reader now sees an incomplete output
                    self.fs.rm(f"{self.dst_path}/{MANIFEST}")
                except FileNotFoundError:
                    pass
                self.fs.rm(self.dst_path, recursive=True)
            self.fs.mv(self.tmp_path, self.dst_path, recursive=True)
            with self.fs.open(f"{self.dst_path}/{MANIFEST}", "wb") as f:
                f.write(manifest)
        self.done = True
        return self.dst_str
    def abort(self) -> None:
        """Delete the temporary directory (idempotent)."""
        if self.done:
            return
        self.done = True
        if self.local:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            try:
                self.fs.rm(self.tmp_path, recursive=True)
            except FileNotFoundError:
                pass

    def __enter__(self) -> AtomicDir:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
        elif not self.done:
            self.abort()


