"""Filesystem helpers: resolve a local path or URL, and publish every output atomically.

The one output rule (every file and directory randsvm-dist writes):

- an existing path is refused unless ``overwrite``; with it, a directory loses only the
  files its ``_manifest.json`` lists (anything else in it stays);
- an output may not be, lie inside, or (a directory) contain one of the command's inputs
  (:func:`check_not_input`);
- it is written under a temporary name and renamed into place in one step
  (:func:`publish_file`, :class:`AtomicDir`), while an ``O_EXCL`` lock file beside it
  (:class:`OutputLock`) makes a second writer of the same path fail at once;
- a directory's manifest records every file's size and content checksum (crc32), which
  readers verify (:func:`verify_checksum`).

Local paths use pyarrow's LocalFileSystem; URLs use pyarrow's own filesystems when it knows
the scheme (``s3://``, ``gs://``, ``hdfs://``, ``file://``) and fsspec otherwise
(``memory://``, ``abfs://``, ...). Both kinds pickle, so a Dataset can be shipped to workers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow.fs as pafs

from randsvm_dist.exceptions import DataFormatError


def is_url(path: str | os.PathLike) -> bool:
    """True when ``path`` is a URL with a scheme (``s3://...``), False for a local path."""
    return "://" in str(path)


def url_fs(url: str | os.PathLike):
    """``(fsspec filesystem, path inside it)`` of a URL (``memory://x``, ``s3://b/k``).

    The one place that maps a URL to an fsspec filesystem; local paths use
    :func:`local_path` instead.

    Raises:
        DataFormatError: no filesystem knows the URL's scheme.
    """
    import fsspec.core

    try:
        return fsspec.core.url_to_fs(str(url))
    except (ImportError, ValueError) as e:
        raise DataFormatError(f"cannot open {url}: {e}") from None


def local_path(path: str | os.PathLike) -> str:
    """A local path made absolute (``~`` expanded, symbolic links resolved)."""
    return str(Path(path).expanduser().resolve())


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
        return url_fs(s)
    except DataFormatError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure means "cannot open this URL"
        raise DataFormatError(f"cannot open {s}: {e}") from None


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
LOCK_SUFFIX = ".randsvm-lock"
_OUR_NAME = re.compile(r"part-\d+\.parquet$")
_BLOCK = 1 << 20


# ---------------------------------------------------------------------- checksums
def _open_input(fs, path: str):
    return fs.open_input_stream(path) if is_pyarrow_fs(fs) else fs.open(path, "rb")


def checksum_bytes(data: bytes, crc: int = 0) -> str:
    """The crc32 of ``data`` as 8 hex digits (what the manifest records)."""
    return f"{zlib.crc32(data, crc) & 0xFFFFFFFF:08x}"


def checksum_file(fs, path: str) -> str:
    """The crc32 of file ``path`` on ``fs``, read in 1 MiB blocks, as 8 hex digits."""
    crc = 0
    with _open_input(fs, path) as f:
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            crc = zlib.crc32(block, crc)
    return f"{crc & 0xFFFFFFFF:08x}"


def verify_checksum(fs, path: str, expected: str | None, data: bytes | None = None) -> None:
    """Check a published file against the crc32 its manifest records.

    Args:
        fs: its filesystem.
        path: the file.
        expected: the recorded checksum (None: nothing recorded, nothing checked).
        data: the file's bytes when already read (else the file is read).

    Raises:
        DataFormatError: the content differs (changed or damaged after it was published).
    """
    if expected is None:
        return
    got = checksum_bytes(data) if data is not None else checksum_file(fs, path)
    if got != expected:
        raise DataFormatError(f"{path}: content checksum crc32 {got} differs from {expected} "
                              f"recorded in {MANIFEST}; the file was changed or damaged "
                              "after it was published; write the data set again")


def read_manifest(fs, root: str) -> dict | None:
    """The completion manifest of output directory ``root``, or None when it has none.

    Raises:
        DataFormatError: the manifest exists but is not ours or is malformed.
    """
    path = f"{root.rstrip('/')}/{MANIFEST}"
    if not file_exists(fs, path):
        return None
    try:
        with _open_input(fs, path) as f:
            raw = f.read()
        manifest = json.loads(raw)
        ok = (manifest.get("format") == MANIFEST_FORMAT
              and all(isinstance(e["name"], str) and "/" not in e["name"]
                      and isinstance(e["bytes"], int)
                      and isinstance(e.get("crc32", ""), str) for e in manifest["files"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise DataFormatError(f"{path}: not a valid randsvm-dist manifest")
    return manifest


def manifest_paths(fs, root: str, manifest: dict, where: str) -> list[str]:
    """The files a manifest lists, checked to be present with the recorded sizes (their
    content checksums are checked when a file is read: :func:`verify_checksum`).

    Raises:
        DataFormatError: a listed file is missing or has another size.
    """
    out = []
    for entry in manifest["files"]:
        path = f"{root.rstrip('/')}/{entry['name']}"
        if not file_exists(fs, path):
            raise DataFormatError(f"{where}: {entry['name']} is missing; {MANIFEST} lists it "
                                  "(the output was changed after it was published); write "
                                  "the output again")
        if file_size(fs, path) != entry["bytes"]:
            raise DataFormatError(f"{where}: {entry['name']} has changed since the output was "
                                  f"published ({file_size(fs, path)} bytes, {MANIFEST} lists "
                                  f"{entry['bytes']}); write the output again")
        out.append(path)
    return out


def manifest_checksums(root: str, manifest: dict) -> dict[str, str]:
    """``{path: crc32}`` of the files a manifest lists with a checksum."""
    return {f"{root.rstrip('/')}/{e['name']}": e["crc32"] for e in manifest["files"]
            if e.get("crc32")}


# ---------------------------------------------------------------------- the output rule
def _listing(fs, path: str) -> list[tuple[str, bool, int]]:
    """(name, is a file, bytes) of every entry directly under directory ``path``."""
    if is_pyarrow_fs(fs):
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=False))
        return [(os.path.basename(i.path), i.type == pafs.FileType.File, int(i.size or 0))
                for i in infos]
    return [(os.path.basename(e["name"].rstrip("/")), e.get("type") == "file",
             int(e.get("size") or 0)) for e in fs.ls(path, detail=True)]


def _ours(fs, path: str, entries) -> list[str] | None:
    """The names of the files under ``path`` that randsvm-dist wrote (those its manifest
    lists; written before manifests: the ``part-N.parquet`` files when nothing else is
    there), or None when it is not an output of this project."""
    manifest = read_manifest(fs, path)
    if manifest is not None:
        return [e["name"] for e in manifest["files"]]
    if all(is_file and _OUR_NAME.match(n) for n, is_file, _ in entries):
        return [n for n, _, _ in entries]
    return None


def _check_replaceable(fs, path: str, overwrite: bool, shown: str) -> None:
    """Refuse an existing output unless ``overwrite`` and it is one this project wrote."""
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
    if _ours(fs, path, entries) is None:
        raise DataFormatError(f"output {shown} was not written by randsvm-dist (no "
                              f"{MANIFEST}); --overwrite replaces only outputs this project "
                              "wrote, so remove it yourself if it should go")


def check_output_dir(path_or_url: str | os.PathLike, overwrite: bool = False) -> None:
    """Fail early (before any work) if output directory ``path_or_url`` may not be written.

    Raises:
        DataFormatError: it exists and ``overwrite`` is False, it is a file, it was not
            written by randsvm-dist, or its nearest existing parent is not writable.
    """
    if is_url(path_or_url):
        fs, path = resolve(path_or_url)
        _check_replaceable(fs, path, overwrite, str(path_or_url))
        return
    path = local_path(path_or_url)
    _check_replaceable(pafs.LocalFileSystem(), path, overwrite, str(path_or_url))
    parent = Path(path).parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise DataFormatError(f"output {path_or_url}: directory {parent} is not writable")


def check_output_file(path: str | os.PathLike, overwrite: bool = False,
                      what: str = "output") -> None:
    """Fail early if a file output (a report, range file, PNG, CSV, model) may not be
    written at ``path``.

    Raises:
        DataFormatError: it is a directory, its directory is missing or not writable, or
            it exists and ``overwrite`` is False.
    """
    s = os.fspath(path)
    if is_url(s):
        fs, p = url_fs(s)
        if not overwrite and fs.exists(p):
            raise DataFormatError(f"{what} {s} exists; choose a new path or pass --overwrite")
        return
    full = Path(local_path(s))
    if full.is_dir():
        raise DataFormatError(f"{what} {s} is a directory; give a file name")
    if not full.parent.is_dir():
        raise DataFormatError(f"{what} {s}: directory {full.parent} does not exist")
    if not os.access(full.parent, os.W_OK):
        raise DataFormatError(f"{what} {s}: directory {full.parent} is not writable")
    if full.exists() and not overwrite:
        raise DataFormatError(f"{what} {s} exists; choose a new path or pass --overwrite")


def _inside(a: str, b: str) -> bool:
    """True when path ``a`` is ``b`` or lies under directory ``b``."""
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.startswith(b + "/")


def check_not_input(output: str | os.PathLike, inputs: Iterable[str | os.PathLike | None],
                    what: str = "output", directory: bool = False) -> None:
    """Refuse an output that is one of the inputs or lies inside one (or, for a
    ``directory`` output, holds one): writing it would destroy or change what is read.

    Raises:
        DataFormatError: naming both paths.
    """
    def norm(p) -> str:
        p = os.fspath(p)
        return p.rstrip("/") if is_url(p) else local_path(p)

    out = norm(output)
    for given in inputs:
        if not given:
            continue
        inp = norm(given)
        if _inside(out, inp) or (directory and _inside(inp, out)):
            raise DataFormatError(f"{what} {os.fspath(output)} is, holds or lies inside the "
                                  f"input {os.fspath(given)}; write the output elsewhere")


_HELD: dict[str, int] = {}
_HELD_GUARD = threading.Lock()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """An ``O_EXCL`` lock file ``.<name>.randsvm-lock`` beside a local output, held while it
    is written, so that a second writer of the same path fails at once instead of racing.
    Re-entrant within one process; a lock left by a process that no longer runs on this
    host is taken over. URLs are not locked (object stores have no exclusive create).

    Args:
        target: the output's path.
    """

    def __init__(self, target: str | os.PathLike):
        self.target = os.fspath(target)
        self.local = not is_url(self.target)
        full = Path(local_path(self.target)) if self.local else None
        self.path = str(full.parent / f".{full.name}{LOCK_SUFFIX}") if full else ""
        self.held = False

    def acquire(self) -> OutputLock:
        """Take the lock.

        Raises:
            DataFormatError: another process holds it, or the directory is not writable.
        """
        if not self.local or self.held:
            return self
        with _HELD_GUARD:
            if self.path in _HELD:
                _HELD[self.path] += 1
                self.held = True
                return self
            for _ in range(2):
                try:
                    fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                except FileExistsError:
                    owner = _lock_owner(self.path)
                    if owner and owner.get("host") == socket.gethostname() and \
                            not _pid_alive(int(owner.get("pid", 0))):
                        Path(self.path).unlink(missing_ok=True)  # its writer died
                        continue
                    who = f"process {owner.get('pid')} on {owner.get('host')}" if owner \
                        else "another process"
                    raise DataFormatError(
                        f"output {self.target} is being written by {who} right now (lock "
                        f"file {self.path}); wait for it, or delete the lock file if that "
                        "process no longer runs") from None
                except OSError as e:
                    raise DataFormatError(f"output {self.target}: cannot write in "
                                          f"{os.path.dirname(self.path)} ({e.strerror})") \
                        from None
                with os.fdopen(fd, "w") as f:
                    json.dump({"pid": os.getpid(), "host": socket.gethostname(),
                               "since": time.time()}, f)
                _HELD[self.path] = 1
                self.held = True
                return self
        raise DataFormatError(f"output {self.target}: cannot take its lock {self.path}")

    def release(self) -> None:
        """Give the lock back (the file goes when the last holder in this process leaves)."""
        if not self.held:
            return
        self.held = False
        with _HELD_GUARD:
            _HELD[self.path] -= 1
            if _HELD[self.path] <= 0:
                del _HELD[self.path]
                Path(self.path).unlink(missing_ok=True)

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _lock_owner(path: str) -> dict | None:
    try:
        owner = json.loads(Path(path).read_text())
        return owner if isinstance(owner, dict) else None
    except (OSError, ValueError):
        return None


def publish_file(path: str | os.PathLike, data: bytes | Callable[[str], None], *,
                 overwrite: bool = False, what: str = "output") -> str:
    """Write a file output as one unit, under the one output rule (module docstring).

    Args:
        path: the file (local path or fsspec URL).
        data: its bytes, or a function that writes the file at the path it is given (a
            temporary sibling with the same suffix, e.g. ``fig.savefig``).
        overwrite: replace an existing file.
        what: what the file is, for error messages (e.g. ``--report``).

    Returns:
        ``path``.

    Raises:
        DataFormatError: it exists without ``overwrite``, is a directory, its directory is
            missing or not writable, or another process is writing it.
    """
    s = os.fspath(path)
    if is_url(s):
        check_output_file(s, overwrite, what)
        fs, p = url_fs(s)
        tmp = f"{p}.tmp-{uuid.uuid4().hex[:8]}"
        if callable(data):
            raise DataFormatError(f"{what} {s}: only local paths take a drawn file")
        with fs.open(tmp, "wb") as f:
            f.write(data)
        fs.mv(tmp, p)
        return s
    full = Path(local_path(s))
    with OutputLock(s):
        check_output_file(s, overwrite, what)
        tmp = full.parent / f".{full.stem}.tmp-{uuid.uuid4().hex[:8]}{full.suffix}"
        try:
            if callable(data):
                data(str(tmp))
            else:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(tmp, full)
        except OSError as e:
            raise DataFormatError(f"{what} {s}: cannot write it ({e.strerror or e})") from None
        finally:
            tmp.unlink(missing_ok=True)
    return s


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Replace file ``path`` (local path or fsspec URL) by ``data`` as one unit (no
    existence check: for files this project rewrites, e.g. job status and checkpoints).

    Raises:
        DataFormatError: the file cannot be written (its directory is missing or read-only).
    """
    s = os.fspath(path)
    if is_url(s):
        fs, p = url_fs(s)
        tmp = f"{p}.tmp-{uuid.uuid4().hex[:8]}"
        with fs.open(tmp, "wb") as f:
            f.write(data)
        fs.mv(tmp, p)
        return
    tmp = f"{s}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, s)
    except OSError as e:
        raise DataFormatError(f"cannot write {s}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a local file or fsspec URL.

    Raises:
        FileNotFoundError: no such file.
    """
    s = os.fspath(path)
    if is_url(s):
        fs, p = url_fs(s)
        with fs.open(p, "rb") as f:
            return f.read()
    with open(s, "rb") as f:
        return f.read()


def makedirs(path: str | os.PathLike) -> str:
    """Create directory ``path`` (local or URL) and its parents if missing; returns it.

    Raises:
        DataFormatError: it cannot be created (a read-only parent, a file in the way).
    """
    s = os.fspath(path)
    try:
        if is_url(s):
            fs, p = url_fs(s)
            fs.makedirs(p, exist_ok=True)
        else:
            os.makedirs(s, exist_ok=True)
    except (OSError, FileExistsError) as e:
        raise DataFormatError(f"cannot create directory {s}: "
                              f"{getattr(e, 'strerror', None) or e}") from None
    return s


class AtomicDir:
    """A temporary output directory that becomes ``dst`` only when committed.

    Files are written under a sibling ``.<name>.tmp-<id>`` while a lock file beside ``dst``
    keeps other writers out. ``commit()`` writes the completion manifest (``_manifest.json``:
    every file with its size and crc32) and publishes: a local directory is renamed into
    place in one step; when ``dst`` also holds files randsvm-dist did not write, or on
    fsspec URLs, the manifest is removed first, only the files it listed are replaced, and
    the new manifest is written last, so a reader (which requires the manifest) never takes
    an interrupted write for a complete one and nobody else's files are touched. ``abort()``
    (or leaving a ``with`` block on an exception) deletes the temporary directory.

    Raises:
        DataFormatError: ``dst`` exists and ``overwrite`` is False, ``dst`` is not an output
            this project wrote, another process is writing it, or it cannot be created.
    """

    def __init__(self, dst: str | os.PathLike, overwrite: bool = False):
        self.dst_str = str(dst)
        self.overwrite = overwrite
        self.local = not is_url(dst)
        self.lock = OutputLock(dst)
        self.done = False
        if self.local:
            self.dst = Path(local_path(dst))
            self.fs = pafs.LocalFileSystem()
            _check_replaceable(self.fs, str(self.dst), overwrite, self.dst_str)
            self.dst_path = str(self.dst)
            try:
                self.dst.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise DataFormatError(f"output {self.dst_str}: cannot create "
                                      f"{self.dst.parent} ({e.strerror})") from None
            self.lock.acquire()
            try:
                _check_replaceable(self.fs, str(self.dst), overwrite, self.dst_str)
                self.tmp = self.dst.parent / f".{self.dst.name}.tmp-{uuid.uuid4().hex[:8]}"
                self.tmp.mkdir()
            except OSError as e:
                self.lock.release()
                raise DataFormatError(f"output {self.dst_str}: cannot write in "
                                      f"{self.dst.parent} ({e.strerror})") from None
            except BaseException:
                self.lock.release()
                raise
            self.tmp_path = str(self.tmp)
        else:
            self.fs, self.dst_path = url_fs(self.dst_str)
            _check_replaceable(self.fs, self.dst_path, overwrite, self.dst_str)
            base = self.dst_path.rstrip("/")
            self.tmp_path = f"{base}.tmp-{uuid.uuid4().hex[:8]}"
            self.fs.makedirs(self.tmp_path, exist_ok=True)

    def path(self, name: str) -> str:
        """Path of file ``name`` inside the temporary directory."""
        return f"{self.tmp_path}/{name}"

    def _manifest(self) -> bytes:
        files = sorted((n, b) for n, is_file, b in _listing(self.fs, self.tmp_path)
                       if is_file and n != MANIFEST)
        entries = [{"name": n, "bytes": b,
                    "crc32": checksum_file(self.fs, f"{self.tmp_path}/{n}")}
                   for n, b in files]
        return json.dumps({"format": MANIFEST_FORMAT, "written_at": time.time(),
                           "checksum": "crc32", "files": entries}, indent=1).encode()

    def _rm(self, path: str) -> None:
        try:
            if self.local:
                os.unlink(path)
            else:
                self.fs.rm(path)
        except FileNotFoundError:
            pass

    def _replace_listed(self, manifest: bytes) -> None:
        """Publish into an existing ``dst``, touching only the files randsvm-dist wrote."""
        entries = _listing(self.fs, self.dst_path)
        ours = set(_ours(self.fs, self.dst_path, entries) or [])
        self._rm(f"{self.dst_path}/{MANIFEST}")  # un-publish first
        for name, is_file, _ in entries:
            if is_file and name in ours:
                self._rm(f"{self.dst_path}/{name}")
        for name, is_file, _ in _listing(self.fs, self.tmp_path):
            if is_file:
                src, dst = f"{self.tmp_path}/{name}", f"{self.dst_path}/{name}"
                if self.local:
                    os.replace(src, dst)
                else:
                    self.fs.mv(src, dst)
        if self.local:
            shutil.rmtree(self.tmp, ignore_errors=True)
            (self.dst / MANIFEST).write_bytes(manifest)
        else:
            self.fs.rm(self.tmp_path, recursive=True)
            with self.fs.open(f"{self.dst_path}/{MANIFEST}", "wb") as f:
                f.write(manifest)

    def commit(self) -> str:
        """Publish the finished directory at ``dst`` with its manifest; returns ``dst``."""
        manifest = self._manifest()
        try:
            exists = self.dst.is_dir() if self.local else self.fs.exists(self.dst_path)
            entries = _listing(self.fs, self.dst_path) if exists else []
            ours = set(_ours(self.fs, self.dst_path, entries) or []) if entries else set()
            if [n for n, _, _ in entries if n not in ours and n != MANIFEST]:
                self._replace_listed(manifest)  # someone else's files stay where they are
            elif self.local:
                (self.tmp / MANIFEST).write_bytes(manifest)
                if exists:
                    old = self.dst.parent / f".{self.dst.name}.old-{uuid.uuid4().hex[:8]}"
                    os.replace(self.dst, old)
                    os.replace(self.tmp, self.dst)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(self.tmp, self.dst)
            else:
                if exists:
                    self._rm(f"{self.dst_path}/{MANIFEST}")  # first un-publish
                    self.fs.rm(self.dst_path, recursive=True)
                self.fs.mv(self.tmp_path, self.dst_path, recursive=True)
                with self.fs.open(f"{self.dst_path}/{MANIFEST}", "wb") as f:
                    f.write(manifest)
        except OSError as e:
            if not self.local:  # e.g. a dropped connection: the caller sees it as it is
                raise
            raise DataFormatError(f"output {self.dst_str}: cannot publish it "
                                  f"({e.strerror or e})") from None
        self.done = True
        self.lock.release()
        return self.dst_str

    def abort(self) -> None:
        """Delete the temporary directory (idempotent)."""
        if self.done:
            return
        self.done = True
        try:
            if self.local:
                shutil.rmtree(self.tmp, ignore_errors=True)
            else:
                try:
                    self.fs.rm(self.tmp_path, recursive=True)
                except FileNotFoundError:
                    pass
        finally:
            self.lock.release()

    def __enter__(self) -> AtomicDir:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.done:
            self.abort()
