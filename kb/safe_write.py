"""Every file kb writes goes through here: atomic, exclusive unless forced, one-line errors.

Why each rule:

* **Atomic**: the text goes to a temporary file in the target's directory, is flushed and
  fsync'ed, and only then takes the target's name. A full disk or a Ctrl-C mid-write leaves
  the old file (or none), never a truncated one that a rerun would then refuse to replace.
* **Exclusive**: without ``force`` the name is taken with ``link()`` (or ``O_EXCL``), which
  fails if anything, even a dangling symlink, is already there. Of six concurrent runs
  writing the same ``-o`` exactly one succeeds and the others say "file exists".
* **Never through a link**: with ``force`` a symlink at the target is replaced by the new
  file, not followed, so ``-o link`` cannot create or clobber the link's target.
* **Devices and pipes** (``-o /dev/null --force``) are written in place: renaming over them
  would replace the device node itself.
* **Errors** (missing directory, a directory as target, no space, no permission) raise
  :class:`KbError` (exit code 2) with one line naming the path.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

from kb.engine.errors import KbError

__all__ = ["atomic_write_bytes", "atomic_write_text", "write_output", "write_stdout"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _error(path: str, exc: OSError) -> KbError:
    from kb.safe_text import one_line

    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        hint = "Free some space or write elsewhere"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "Choose a writable path"
    else:
        hint = ""
    return KbError(one_line(path), f"cannot write ({reason})", hint)


def _exists_error(path: str) -> KbError:
    from kb.safe_text import one_line

    return KbError(one_line(path), "file exists, not overwritten", "Pass --force to replace it")


def _write_in_place(path: str, data: bytes) -> None:
    """Write into an existing device or FIFO (``/dev/null``, ``/dev/stderr``) without renaming."""
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, force: bool = False) -> None:
    """Write ``data`` to ``path`` atomically; refuse an existing path unless ``force``.

    Raises KbError (exit 2, one line naming ``path``) for every failure; on failure the
    previous content of ``path`` (if any) is untouched and no temporary file is left.
    """
    target = os.fspath(path)
    p = Path(target)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _error(target, exc) from None
    if st is not None:
        if not force:
            raise _exists_error(target)
        if stat.S_ISDIR(st.st_mode):
            raise KbError(target, "is a directory", "Give a file name")
        if stat.S_ISLNK(st.st_mode):
            pass  # replaced below by the rename: the link's target is never touched
        elif not stat.S_ISREG(st.st_mode):
            try:
                _write_in_place(target, data)
            except OSError as exc:
                raise _error(target, exc) from None
            return
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise KbError(target, f"cannot write (directory {parent} does not exist)",
                      "Create it first or choose another path")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise _error(target, exc) from None
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            # mkstemp makes 0600 files; a report should get the mode any new file gets
            os.chmod(tmp, 0o666 & ~_umask())
            if force:
                os.replace(tmp, target)
            else:
                _claim(tmp, target)
        except FileExistsError:
            raise _exists_error(target) from None
        except OSError as exc:
            raise _error(target, exc) from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        except OSError:  # pragma: no cover - a vanished directory; nothing left to clean
            pass
    _fsync_dir(parent)


def _claim(tmp: str, target: str) -> None:
    """Give ``tmp`` the name ``target`` only if nothing has that name (atomic test-and-set)."""
    try:
        os.link(tmp, target)  # fails with EEXIST when anything is there, links included
        return
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                             errno.EMLINK, errno.ENOSYS):
            raise
    # no hard links on this file system: reserve the name exclusively, then rename over it
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    os.replace(tmp, target)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (best effort: not every file system lets a directory be synced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, force: bool = False) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8", "surrogateescape"), force=force)


def write_stdout(text: str) -> None:
    """Write to stdout; a full or failing stdout becomes a KbError instead of a traceback.

    After a failure stdout is pointed at /dev/null so that the interpreter's final flush does
    not print "Exception ignored" noise. A closed pipe (``kb ... | head``) stays a
    BrokenPipeError for the CLI to treat as success.
    """
    try:
        out = getattr(sys.stdout, "buffer", None)
        if out is not None:
            sys.stdout.flush()  # keep the order of anything already written as text
            out.write(text.encode(sys.stdout.encoding or "utf-8", "replace"))
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        raise
    except OSError as exc:
        _silence_stdout()
        raise _error("<stdout>", exc) from None


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def write_output(text: str, output: str | None, force: bool = False) -> None:
    """The CLI's ``-o``: stdout for None or ``-``, else an atomic, exclusive file write."""
    if not text.endswith("\n"):
        text += "\n"
    if output in (None, "-"):
        write_stdout(text)
        return
    atomic_write_text(output, text, force=force)
