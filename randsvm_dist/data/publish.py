"""Publishing outputs as one unit: a file or directory is written under a temporary name
and renamed into place, while a lock file beside it keeps a second writer of the same path
out (:class:`OutputLock`). What may be written at all is decided by
:mod:`randsvm_dist.data.outputs` (the output rule), which every writer here applies first.
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
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs

from randsvm_dist.data.checksums import MANIFEST, manifest_bytes
from randsvm_dist.data.filesystem import is_url, list_entries, local_path, url_fs
from randsvm_dist.data.outputs import check_output_file, check_replaceable, written_files
from randsvm_dist.exceptions import DataFormatError, OutputBusyError

LOCK_SUFFIX = ".randsvm-lock"
_HELD: dict[str, int] = {}
_HELD_GUARD = threading.Lock()
_STAGING: set[str] = set()  # staging paths this process is writing now


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

    def reclaim_staging(self, prefix: str, suffix: str = "") -> None:
        """Delete the staging leftovers ``<prefix><8 hex digits><suffix>`` beside the
        output that a killed writer left (``kill -9``: nothing ran to clean up). While
        the lock is held no other process writes the output, so every such name is a
        leftover, but those this process is staging right now (``_STAGING``)."""
        if not (self.local and self.held):
            return
        parent = Path(self.path).parent
        pattern = re.compile(re.escape(prefix) + r"[0-9a-f]{8}" + re.escape(suffix) + "$")
        try:
            names = os.listdir(parent)
        except OSError:
            return
        for name in names:
            if not pattern.match(name):
                continue
            left = parent / name
            if str(left) in _STAGING:
                continue
            try:
                if left.is_dir() and not left.is_symlink():
                    shutil.rmtree(left)
                else:
                    left.unlink()
            except OSError:
                pass  # not ours to remove after all (permissions): leave it

    def acquire(self) -> OutputLock:
        """Take the lock.

        Raises:
            OutputBusyError: another process holds it.
            DataFormatError: the directory is not writable.
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
                    raise _busy(self.target, self.path, owner) from None
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
        raise OutputBusyError(f"output {self.target}: cannot take its lock {self.path}")

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


def _busy(target: str, path: str, owner: dict | None) -> OutputBusyError:
    who = f"process {owner.get('pid')} on {owner.get('host')}" if owner else "another process"
    return OutputBusyError(f"output {target} is being written by {who} right now (lock file "
                           f"{path}); wait for it, or delete the lock file if that process "
                           "no longer runs")


def check_not_locked(target: str | os.PathLike) -> None:
    """Refuse at once an output whose lock another live process holds (a look only: the
    lock is taken later, by :class:`OutputLock`); a command calls it before its imports
    and checks, so that a second writer is refused at once.

    Raises:
        OutputBusyError: the lock file exists and its writer runs (or runs on another
            host).
    """
    lock = OutputLock(target)
    if not lock.local or lock.path in _HELD or not os.path.exists(lock.path):
        return
    owner = _lock_owner(lock.path)
    if owner and owner.get("host") == socket.gethostname() and \
            not _pid_alive(int(owner.get("pid", 0))):
        return  # its writer died: the lock is taken over when the output is claimed
    raise _busy(lock.target, lock.path, owner)


def _lock_owner(path: str) -> dict | None:
    try:
        owner = json.loads(Path(path).read_text())
        return owner if isinstance(owner, dict) else None
    except (OSError, ValueError):
        return None


def _write_synced(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to local file ``path`` and flush it to the disk."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _replace_local(tmp: str | os.PathLike, dst: str | os.PathLike,
                   write: Callable[[str], None], failure: str) -> None:
    """Write local file ``tmp`` with ``write`` and rename it to ``dst`` in one step; the
    temporary goes whatever happens.

    Raises:
        DataFormatError: ``failure`` with ``{error}`` replaced by the OSError's reason.
    """
    try:
        write(str(tmp))
        os.replace(tmp, dst)
    except OSError as e:
        raise DataFormatError(failure.replace("{error}", str(e.strerror or e))) from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def _replace_url(url: str, data: bytes) -> None:
    """Write ``data`` beside fsspec URL ``url`` and move it into place."""
    fs, p = url_fs(url)
    tmp = f"{p}.tmp-{uuid.uuid4().hex[:8]}"
    with fs.open(tmp, "wb") as f:
        f.write(data)
    fs.mv(tmp, p)


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
        DataFormatError: it exists without ``overwrite``, is a directory, or its directory
            is missing or not writable.
        OutputBusyError: another process is writing it.
    """
    s = os.fspath(path)
    if is_url(s):
        check_output_file(s, overwrite, what)
        if callable(data):
            raise DataFormatError(f"{what} {s}: only local paths take a drawn file")
        _replace_url(s, data)
        return s
    full = Path(local_path(s))
    with OutputLock(s) as lock:
        check_output_file(s, overwrite, what)
        lock.reclaim_staging(f".{full.stem}.tmp-", full.suffix)
        tmp = full.parent / f".{full.stem}.tmp-{uuid.uuid4().hex[:8]}{full.suffix}"
        write = data if callable(data) else (lambda p: _write_synced(p, data))
        _STAGING.add(str(tmp))
        try:
            _replace_local(tmp, full, write, f"{what} {s}: cannot write it ({{error}})")
        finally:
            _STAGING.discard(str(tmp))
    return s


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Replace file ``path`` (local path or fsspec URL) by ``data`` as one unit (no
    existence check: for files this project rewrites, e.g. job status and checkpoints).

    Raises:
        DataFormatError: the file cannot be written (its directory is missing or read-only).
    """
    s = os.fspath(path)
    if is_url(s):
        _replace_url(s, data)
        return
    tmp = f"{s}.tmp-{uuid.uuid4().hex[:8]}"
    _replace_local(tmp, s, lambda p: _write_synced(p, data), f"cannot write {s}: {{error}}")


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
            this project wrote, or it cannot be created.
        OutputBusyError: another process is writing it.
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
            check_replaceable(self.fs, str(self.dst), overwrite, self.dst_str)
            self.dst_path = str(self.dst)
            try:
                self.dst.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise DataFormatError(f"output {self.dst_str}: cannot create "
                                      f"{self.dst.parent} ({e.strerror})") from None
            self.lock.acquire()
            try:
                check_replaceable(self.fs, str(self.dst), overwrite, self.dst_str)
                self.lock.reclaim_staging(f".{self.dst.name}.tmp-")
                self.tmp = self.dst.parent / f".{self.dst.name}.tmp-{uuid.uuid4().hex[:8]}"
                self.tmp.mkdir()
                _STAGING.add(str(self.tmp))
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
            check_replaceable(self.fs, self.dst_path, overwrite, self.dst_str)
            base = self.dst_path.rstrip("/")
            self.tmp_path = f"{base}.tmp-{uuid.uuid4().hex[:8]}"
            self.fs.makedirs(self.tmp_path, exist_ok=True)

    def path(self, name: str) -> str:
        """Path of file ``name`` inside the temporary directory."""
        return f"{self.tmp_path}/{name}"

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
        entries = list_entries(self.fs, self.dst_path)
        ours = set(written_files(self.fs, self.dst_path, entries) or [])
        self._rm(f"{self.dst_path}/{MANIFEST}")  # un-publish first
        for name, is_file, _ in entries:
            if is_file and name in ours:
                self._rm(f"{self.dst_path}/{name}")
        for name, is_file, _ in list_entries(self.fs, self.tmp_path):
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
        manifest = manifest_bytes(self.fs, self.tmp_path)
        try:
            exists = self.dst.is_dir() if self.local else self.fs.exists(self.dst_path)
            entries = list_entries(self.fs, self.dst_path) if exists else []
            ours = set(written_files(self.fs, self.dst_path, entries) or []) if entries else set()
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
        _STAGING.discard(self.tmp_path)
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
            _STAGING.discard(self.tmp_path)
            self.lock.release()

    def __enter__(self) -> AtomicDir:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self.done:
            self.abort()
