"""The completion manifest of an output directory and the content checksums it records.

A directory randsvm-dist publishes holds ``_manifest.json``: every file's name, size and
crc32. Readers require it (a directory without one is an interrupted or foreign write),
check the sizes when they list the files (:func:`manifest_paths`) and each file's checksum
when they read it (:func:`verify_checksum`).
"""

from __future__ import annotations

import json
import time
import zlib

from randsvm_dist.data.filesystem import file_exists, file_size, list_entries, open_input
from randsvm_dist.exceptions import DataFormatError

MANIFEST = "_manifest.json"
MANIFEST_FORMAT = "randsvm-dist-manifest/1"
_BLOCK = 1 << 20  # bytes read at a time by checksum_file


def checksum_bytes(data: bytes, crc: int = 0) -> str:
    """The crc32 of ``data`` as 8 hex digits (what the manifest records)."""
    return f"{zlib.crc32(data, crc) & 0xFFFFFFFF:08x}"


def checksum_file(fs, path: str) -> str:
    """The crc32 of file ``path`` on ``fs``, read in 1 MiB blocks, as 8 hex digits."""
    crc = 0
    with open_input(fs, path) as f:
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
        with open_input(fs, path) as f:
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


def manifest_bytes(fs, root: str) -> bytes:
    """The manifest of the files directly under directory ``root`` (a manifest already
    there is not listed): each file's name, size and crc32, as JSON bytes."""
    files = sorted((n, b) for n, is_file, b in list_entries(fs, root)
                   if is_file and n != MANIFEST)
    entries = [{"name": n, "bytes": b, "crc32": checksum_file(fs, f"{root}/{n}")}
               for n, b in files]
    return json.dumps({"format": MANIFEST_FORMAT, "written_at": time.time(),
                       "checksum": "crc32", "files": entries}, indent=1).encode()
