"""The one atomic file writer: a reader (or a crash) sees the old file or the new one, never half of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable


def write_atomically(path: str | Path, content: str | bytes | Callable[[BinaryIO], None]) -> Path:
    """Write ``content`` (text as UTF-8, bytes, or a function writing into a binary stream) to ``path``
    through a uniquely named temporary file in the same folder and a rename; several processes may
    write the same path at once. The folder must exist."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as stream:
            if isinstance(content, str):
                stream.write(content.encode("utf-8"))
            elif isinstance(content, (bytes, bytearray)):
                stream.write(content)
            else:
                content(stream)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; results are not secret
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
