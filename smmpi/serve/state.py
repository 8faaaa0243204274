"""serve's state folder: its key pair, and safe paths under it.

Everything serve keeps lives under one folder (``--state``, default
``~/.smmpi/serve``), created 0700; every file in it is written 0600 through
a temporary name and never through a link. Names that come from requests
(job names, bucket names, S3 keys) never become paths: jobs are checked
against SageMaker's name pattern, objects are stored under a hash.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smmpi.errors import BadInput

DEFAULT_STATE = Path("~/.smmpi/serve")
_KEY_FILE = "credentials.json"
MAX_STATE_FILE = 256 << 20  # bytes: the largest state file serve reads
_ACCESS = re.compile(r"^[A-Z0-9]{16,128}$")
_SECRET = re.compile(r"^[A-Za-z0-9+/]{16,128}$")


@dataclass(frozen=True)
class Keys:
    """serve's own key pair: the only one it accepts."""

    access_key: str
    secret_key: str


def state_folder(path: str | Path | None) -> Path:
    """The state folder, created 0700 (a link or a file there is refused)."""
    folder = Path(path or DEFAULT_STATE).expanduser().absolute()
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise BadInput("--state", str(folder), "a folder (not a link or a file)")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    except OSError as err:
        raise BadInput(
            "--state", str(folder), f"a folder serve can write ({err.strerror})"
        ) from None
    return folder


def subfolder(root: Path, *parts: str) -> Path:
    """``root/parts...``, created 0700; each part must be one plain path component."""
    folder = root
    for part in parts:
        if not part or part in (".", "..") or "/" in part or "\0" in part:
            raise ValueError(f"not a plain name: {part!r}")
        folder = folder / part
        if folder.is_symlink():
            raise BadInput("--state", str(folder), "a folder serve made (serve follows no link)")
        folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def write_private(path: Path, data: bytes, *, new: bool = False) -> None:
    """Write ``data`` to ``path`` (0600) through a temporary file, never through a link.

    ``new``: only if ``path`` does not exist yet (FileExistsError otherwise), so that of two
    processes writing at once, one wins whole and the other can read what it wrote."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if new:
            os.link(tmp, path)  # atomic, and refused where a file (or link) already is
            tmp.unlink()
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    write_private(path, json.dumps(data, default=str).encode())


class BadStateFile(BadInput):
    """A file in the state folder that serve did not write as it is (one line names it)."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__("--state", str(path), f"a state file as serve wrote it ({why})")
        self.why = why


def read_json(path: Path, cap: int = MAX_STATE_FILE) -> Any:
    """The JSON in ``path``: a regular file (never a link, a FIFO or a device) of at most
    ``cap`` bytes; :class:`BadStateFile` (a ValueError) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ValueError("not a regular file")
            if info.st_size > cap:
                raise ValueError(f"larger than {cap} bytes")
            return json.loads(f.read(cap + 1))
    except OSError as err:
        raise BadStateFile(path, err.strerror or type(err).__name__) from None
    except (ValueError, RecursionError) as err:
        raise BadStateFile(path, str(err)[:120] or "not JSON") from None


def _new_keys() -> Keys:
    upper = string.ascii_uppercase + string.digits
    access = "AKIA" + "".join(secrets.choice(upper) for _ in range(16))
    alphabet = string.ascii_letters + string.digits + "+/"
    secret = "".join(secrets.choice(alphabet) for _ in range(40))
    return Keys(access, secret)


def _read_keys(path: Path) -> Keys:
    """The key pair in ``path``; :class:`BadInput` naming the file if it is not serve's."""
    try:
        data = read_json(path, cap=4096)
        keys = Keys(data["access_key"], data["secret_key"])
        if not (_ACCESS.match(keys.access_key) and _SECRET.match(keys.secret_key)):
            raise ValueError("not a key pair")
    except (OSError, ValueError, KeyError, TypeError):
        raise BadInput(
            "--state", str(path), "a state folder whose credentials.json is serve's own: a "
            "regular file (not a link) with its key pair (move it away: serve makes a new pair)",
        ) from None  # fmt: skip
    return keys


def load_keys(folder: Path) -> Keys:
    """serve's key pair, generated at the first start and kept 0600 in the state folder."""
    path = folder / _KEY_FILE
    if path.exists() or path.is_symlink():
        return _read_keys(path)
    keys = _new_keys()
    data = {"access_key": keys.access_key, "secret_key": keys.secret_key}
    try:  # a serve and `smmpi serve --env` starting at once on a new folder: one pair wins
        write_private(path, json.dumps(data).encode(), new=True)
    except FileExistsError:
        return load_keys(folder)
    return keys
