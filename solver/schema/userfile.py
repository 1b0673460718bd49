"""Open the files a user names, safely: regular files only, of a bounded size.

Every file fleetplan reads because a user named it (a problem, a card, a calibration, a result
document, a trace, a length distribution, a measurement CSV) goes through `read_user_bytes` or
`read_user_text`. The file is opened with O_NONBLOCK (opening a FIFO then returns at once
instead of waiting for a writer) and checked with fstat on the open descriptor (no window
between the check and the read): anything but a regular file (a FIFO, a socket, /dev/zero,
/dev/urandom, a terminal, a directory) is refused, and so is a file over the limit of its kind.
The read itself stops one byte past the limit, so a file that grows while it is read is
refused too, never read until memory runs out.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from solver.errors import InputError

MAX_DOC_BYTES = 16 << 20  # 16 MiB: problems, cards, calibrations, result documents (the largest shipped is ~0.1 MiB)
MAX_RESULT_BYTES = 64 << 20  # 64 MiB: result documents and benchmark tools' result files
MAX_DATA_BYTES = 256 << 20  # 256 MiB: traces, length distributions, measurement CSVs (millions of rows)

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1 << 20


def _open(p: str, what: str) -> int:
    try:
        return os.open(p, _FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, expected a {what}") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the name
        raise InputError(f"{p!r}: not a valid file name") from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _checked(p: str, limit: int, what: str) -> int:
    """An open descriptor of the regular file `p` of at most `limit` bytes."""
    fd = _open(p, what)
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = f"{_kind(st.st_mode)}, not a regular file; give a {what}"
    elif st.st_size > limit:
        problem = f"{st.st_size:,} bytes, over the {limit:,}-byte limit for a {what}"
    if problem is not None:
        os.close(fd)
        raise InputError(f"{p}: {problem}")
    return fd


def _read(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < n:
        block = os.read(fd, min(_CHUNK, n - total))
        if not block:
            break
        chunks.append(block)
        total += len(block)
    return b"".join(chunks)


def read_user_bytes(path: str | Path, limit: int = MAX_DOC_BYTES, what: str = "file",
                    head: int | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (only its first `head`
    bytes when given); anything else is an InputError naming the file (see the module
    docstring)."""
    p = str(path)
    if head is not None:  # a look at the start: any size
        fd = _checked(p, 1 << 62, what)
        try:
            return _read(fd, head)
        except OSError as exc:
            raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
    fd = _checked(p, limit, what)
    try:
        raw = _read(fd, limit + 1)
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise InputError(f"{p}: over the {limit:,}-byte limit for a {what} (it grew while read)")
    return raw


def read_user_text(path: str | Path, limit: int = MAX_DOC_BYTES, what: str = "file",
                   encoding: str = "utf-8-sig") -> str:
    """The text of a user's file (UTF-8; a leading byte-order mark is dropped); bytes that are
    not UTF-8 are an InputError naming the line."""
    raw = read_user_bytes(path, limit, what)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         f"give a {what} in UTF-8") from None


def is_regular_file(path: str | Path) -> bool:
    """Whether `path` is a regular file (without opening it: a FIFO would block an open)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
