"""Writing the files fleetplan makes (`--out`, `--out-json`, `--plot`, `--export-model`, a batch's
results and summaries, deploy's launch files): one helper for every command.

- a symlink is followed: its target is replaced, the link stays a link;
- the target must be a regular file or not exist yet: a FIFO, a device, a socket or a folder is
  refused (never opened: opening a FIFO for writing blocks until someone reads it);
- the target must not be one of the command's inputs (`os.path.samefile`): `plan p.yaml --out
  p.yaml` is refused rather than overwriting the problem;
- the text goes to a temporary file in the target's folder, which is renamed over the target
  (`os.replace`, atomic on one file system) and removed on any failure;
- every OSError is an `InputError` naming the flag and the path: one line, exit 2.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Iterable, Iterator

from solver.errors import InputError

PathLike = str | os.PathLike

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _same(a: Path, b: PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def target(path: PathLike, flag: str = "--out", inputs: Iterable[PathLike] = ()) -> Path:
    """The file a write to `path` replaces (symlinks followed), checked: a regular file or
    nothing yet, and none of `inputs`."""
    try:
        real = Path(os.path.realpath(path))
        st = os.stat(real)
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write: {_why(exc)}") from None
    except ValueError as exc:  # a NUL byte in the name
        raise InputError(f"{flag} {path!r}: not a file name: {exc}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
        raise InputError(f"{flag} {path}: is {kind}, not a regular file; give a file name")
    for i in inputs:
        if _same(real, i):
            raise InputError(f"{flag} {path}: is the input {i} of this command; write elsewhere")
    return real


@contextlib.contextmanager
def replacing(path: PathLike, flag: str = "--out", inputs: Iterable[PathLike] = ()) -> Iterator[Path]:
    """A temporary path next to `path`'s target: what the block writes there replaces the target
    when the block ends; on any failure the temporary file is removed (an OSError becomes an
    `InputError`)."""
    real = target(path, flag, inputs)
    tmp = real.with_name(f".{real.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        os.replace(tmp, real)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write: {_why(exc)}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def write_bytes(path: PathLike, data: bytes, flag: str = "--out", inputs: Iterable[PathLike] = (),
                mode: int = 0o666) -> Path:
    """Write `data` to `path` atomically (the module docstring says how); returns the target.
    `mode` is the new file's permissions before the umask (0o777 for a script)."""
    with replacing(path, flag, inputs) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return Path(os.path.realpath(path))


def write_text(path: PathLike, text: str, flag: str = "--out", inputs: Iterable[PathLike] = (),
               mode: int = 0o666) -> Path:
    return write_bytes(path, text.encode("utf-8"), flag, inputs, mode)


def folder(path: PathLike, flag: str = "--out") -> Path:
    """`path` as a folder, created with its parents when missing; a file there, or a place that
    cannot be created, is an `InputError`."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{flag} {path}: exists and is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot create the folder: {_why(exc)}") from None
    return p
