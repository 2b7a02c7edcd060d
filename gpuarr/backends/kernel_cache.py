"""The on-disk kernel cache every platform shares: compiled binaries under `GPUARR_CACHE_DIR`.

Entries are written atomically (a temporary file in the entry's directory, then os.replace),
so a reader sees a whole entry or none, also with several processes writing the same key.
Each entry starts with a magic line naming its kind and the SHA-256 of its payload, and
`read` returns the payload only when that checksum holds: a truncated, overwritten or foreign
file is a miss, and the caller rebuilds it. A read-only or full disk only costs a rebuild.
This module imports only the standard library.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """`GPUARR_CACHE_DIR`, by default `~/.cache/gpuarr`."""
    return Path(os.environ.get("GPUARR_CACHE_DIR") or Path.home() / ".cache" / "gpuarr")


def entry_path(kind: str, key: str, suffix: str) -> Path:
    """Where the entry `key` (a hex digest) of `kind` ("nvrtc", "opencl") lives."""
    return cache_dir() / kind / key[:2] / f"{key}.{suffix}"


def read(path: Path, magic: bytes) -> bytes | None:
    """The payload stored at `path`, or None when it is missing or fails its checksum."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(magic) or len(data) < len(magic) + 64:
        return None
    digest, payload = data[len(magic): len(magic) + 64], data[len(magic) + 64:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


def write(path: Path, magic: bytes, payload: bytes) -> None:
    """Store `payload` at `path` atomically, behind `magic` and its checksum."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(magic + hashlib.sha256(payload).hexdigest().encode() + payload)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:  # a full disk can leave the temporary file behind
            try:
                os.unlink(tmp)
            except OSError:
                pass
