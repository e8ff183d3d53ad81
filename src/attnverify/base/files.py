"""Files a run keeps: the one atomic writer, and store entries that are verified when they are read.

A reader (or a crash) sees the old file or the new one, never half of it. A store entry (an experiment's
result, a claim's examples or result) is a header line naming its key, its length and the SHA-256 of its
payload, then the payload, so a damaged, truncated, foreign or unreadable entry is recognised on reading: it is
reported once (a warning line naming the file and what is wrong with it), set aside as ``<name>.damaged-<n>``
for inspection (never deleted) and computed again. A write that fails (a full disk, a read-only folder) is
reported once and leaves the earlier files as they were; the run goes on without keeping what it could not write.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np

LOG = logging.getLogger("attnverify.store")
"""Where damaged entries and failed writes are reported (on stderr when logging is not configured)."""

MAGIC = b"attnverify store entry\n"
VERSION = 1

_reported: set = set()  # what this process has reported already: each damage or failing folder once
_reported_lock = threading.Lock()


def _open_temporary(handle: int) -> BinaryIO:
    """The binary stream of a temporary file (a seam for tests that simulate a full disk)."""
    return os.fdopen(handle, "wb")


def write_atomically(path: str | Path, content: str | bytes | Callable[[BinaryIO], None]) -> Path:
    """Write ``content`` (text as UTF-8, bytes, or a function writing into a binary stream) to ``path``
    through a uniquely named temporary file in the same folder and a rename; several processes may
    write the same path at once. The folder must exist. On an error (e.g. a full disk) the temporary file
    is removed and ``path`` keeps what it held."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with _open_temporary(handle) as stream:
            if isinstance(content, str):
                stream.write(content.encode("utf-8"))
            elif isinstance(content, (bytes, bytearray)):
                stream.write(content)
            else:
                content(stream)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; results are not secret
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError) and not error.filename:
            error.filename = str(path)  # a failed write names no file: say which one it was
        raise
    return path


def report_once(topic: tuple, message: str) -> None:
    """Log ``message`` as a warning unless this process reported ``topic`` already."""
    with _reported_lock:
        if topic in _reported:
            return
        _reported.add(topic)
    LOG.warning(message)


class DamagedEntry(ValueError):
    """A stored entry that cannot be trusted; the message says what is wrong with it."""


def pack_entry(key: str, payload: bytes) -> bytes:
    """The entry of ``payload`` under ``key``: the magic line, a JSON header (version, key, length,
    SHA-256 of the payload) on one line, then the payload."""
    header = {"version": VERSION, "key": key, "bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    return MAGIC + json.dumps(header, ensure_ascii=True).encode("ascii") + b"\n" + payload


def unpack_entry(blob: bytes, key: str) -> bytes:
    """The payload of the entry ``blob``, verified against ``key`` and its header; else `DamagedEntry`."""
    if not blob:
        raise DamagedEntry("empty (0 bytes)")
    if not blob.startswith(MAGIC):
        raise DamagedEntry("not an attnverify store entry (no header: garbled, foreign, or of an older version)")
    line, newline, payload = blob[len(MAGIC):].partition(b"\n")
    if not newline:
        raise DamagedEntry(f"truncated inside its header ({len(blob)} bytes)")
    try:
        header = json.loads(line)
    except ValueError:
        raise DamagedEntry("garbled (its header is not readable)") from None
    if not isinstance(header, dict) or header.get("version") != VERSION:
        raise DamagedEntry(f"of an unknown format (header {line[:80]!r})")
    if header.get("key") != key:
        raise DamagedEntry(f"the entry of another key ({str(header.get('key'))[:120]!r}, expected {key[:120]!r})")
    if len(payload) != header.get("bytes"):
        raise DamagedEntry(f"truncated or extended ({len(payload)} bytes where its header says {header.get('bytes')})")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise DamagedEntry("damaged (the SHA-256 of its content does not match its header)")
    return payload


def set_aside(path: Path, reason: str, identity: os.stat_result | None = None) -> None:
    """Rename the damaged entry ``path`` to ``<name>.damaged-<n>`` (the first free n) and report it once;
    with ``identity`` (the stat of what was read), only if ``path`` is still that file (a writer may have
    replaced it with a good one meanwhile)."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return  # another process set it aside (and reported it) first
    except OSError:
        now = None
    if identity is not None and now is not None and (now.st_ino, now.st_dev) != (identity.st_ino, identity.st_dev):
        return
    n = 1
    while os.path.lexists(path.with_name(f"{path.name}.damaged-{n}")):
        n += 1
    target = path.with_name(f"{path.name}.damaged-{n}")
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return
    except OSError as error:
        report_once(("damaged", str(path)), f"attnverify: store entry {path} is {reason}; it cannot be set aside "
                                            f"({error.strerror or error}), so it is ignored and computed again")
        return
    report_once(("damaged", str(path)), f"attnverify: store entry {path} is {reason}; set aside as {target.name} "
                                        "and computed again")


def read_entry(path: str | Path, key: str, load: Callable[[bytes], Any],
               check: Callable[[Any], str | None] | None = None) -> Any:
    """``load(payload)`` of the entry ``path`` under ``key``, or None when there is none. A damaged,
    truncated, foreign or unreadable entry, a folder in its place, one that ``load`` fails on, or one whose
    value ``check`` finds wrong (it returns what is wrong, or None) is set aside (`set_aside`): None."""
    path = Path(path)
    identity = None
    try:
        with open(path, "rb") as stream:
            identity = os.fstat(stream.fileno())
            blob = stream.read()
        value = load(unpack_entry(blob, key))
        problem = None if check is None else check(value)
        if problem is None:
            return value
        reason = f"holding the wrong object ({problem})"
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        reason = "a folder where a file belongs"
    except DamagedEntry as error:
        reason = str(error)
    except OSError as error:
        reason = f"unreadable ({error.strerror or error})"
    except Exception as error:  # noqa: BLE001 (load: any unpickling error means an entry not to trust)
        reason = f"unreadable ({type(error).__name__}: {str(error)[:120]})"
    set_aside(path, reason, identity)
    return None


def write_entry(path: str | Path, key: str, payload: bytes) -> bool:
    """Write the entry of ``payload`` under ``key`` to ``path`` atomically (a folder in its place is set
    aside first); False, reported once per folder and cause, when it cannot be written (full disk, read-only
    folder): the files written before stay as they were."""
    path = Path(path)
    if path.is_dir():
        set_aside(path, "a folder where a file belongs")
    try:
        write_atomically(path, pack_entry(key, payload))
        return True
    except OSError as error:
        report_unwritable(path, error)
        return False


def report_unwritable(path: Path, error: OSError) -> None:
    """Report once per cause and file system that ``path`` could not be written (a full disk is one line,
    not one per file)."""
    try:
        device = os.stat(path.parent).st_dev
    except OSError:
        device = str(path.parent)
    report_once(("unwritable", error.errno, device),
                f"attnverify: error: cannot write {path} ({error.strerror or error}); what {path.parent} holds "
                "already stays readable, and this run goes on without keeping more there")


def folder_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be a folder to write into (made if missing), or None: it is a file, or a folder
    cannot be made or written there."""
    if not str(path).strip():
        return "is empty"
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=path, prefix=".attnverify-write-test-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        return f"cannot be made or written into ({error.strerror or error})"
    return None


def subfolder(path: Path) -> Path:
    """The folder ``path`` (made if missing; a file in its place is set aside); OSError if it cannot be made."""
    if path.exists() and not path.is_dir():
        set_aside(path, "a file where a folder belongs")
    path.mkdir(parents=True, exist_ok=True)
    return path


def fingerprint(*parts: Any) -> str:
    """The one fingerprint of every on-disk cache of the package (experiments, checks, saddle-point solutions,
    derivations, derivation steps) and of the files it keys them by: 24 hex digits of SHA-256 over ``parts`` in
    order, each a str (UTF-8), bytes, or an array (its float64 values and its shape), each length-prefixed, so
    that ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            data = b"s" + part.encode()
        elif isinstance(part, (bytes, bytearray)):
            data = b"b" + bytes(part)
        else:
            array = np.ascontiguousarray(np.asarray(part, dtype=np.float64))
            data = b"a" + repr(array.shape).encode() + array.tobytes()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:24]
