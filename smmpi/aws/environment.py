"""The AWS variables and files botocore reads, checked before any session is made.

botocore reads ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, ``AWS_CONFIG_FILE`` and
the credentials itself, and fails deep inside a call with a long traceback
(or, for a credential holding a line break, a traceback that prints it).
Here each is one line naming the variable, exit code 2, and a credential's
value is never shown.
"""

from __future__ import annotations

import os
import stat
from urllib.parse import urlsplit

from smmpi.errors import BadInput, SmmpiError

#: The largest AWS config or credentials file smmpi lets botocore read.
FILE_CAP = 1 << 20
CREDENTIAL_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
)
_FILES = {
    "AWS_CONFIG_FILE": "~/.aws/config",
    "AWS_SHARED_CREDENTIALS_FILE": "~/.aws/credentials",
}
_URL_RULE = "an http:// or https:// URL with a host, like http://127.0.0.1:5000"


class BadSetting(SmmpiError):
    """An AWS variable or file botocore cannot use (exit 2: nothing was sent or created)."""

    exit_code = 2


def check_environment() -> None:
    """Refuse, in one line, an AWS variable or file that botocore would choke on."""
    for var in CREDENTIAL_VARS:
        _check_credential(var, os.environ.get(var))
    for var, value in sorted(os.environ.items()):
        if var == "AWS_ENDPOINT_URL" or var.startswith("AWS_ENDPOINT_URL_"):
            check_endpoint_url(var, value)
    for var, default in _FILES.items():
        _check_file(var, os.environ.get(var) or default, var in os.environ)
    _check_profile()


def _check_credential(var: str, value: str | None) -> None:
    if value and not all(" " <= ch <= "~" for ch in value):
        raise BadSetting(
            f"invalid {var}: it holds a line break, a control or a non-ASCII character "
            "(value not shown); allowed: the credential exactly as AWS issued it"
        )


def check_endpoint_url(var: str, value: str) -> str:
    """An endpoint botocore can send to: http(s), a host, a valid port."""
    shown = _without_userinfo(value)
    if not value:
        return value  # botocore ignores an empty one
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        raise BadInput(var, shown, _URL_RULE) from None
    bad_chars = any(ch in value for ch in "\t\r\n ") or not value.isprintable()
    if parts.scheme not in ("http", "https") or not parts.hostname or bad_chars or not port_ok:
        raise BadInput(var, shown, _URL_RULE)
    return value


def _without_userinfo(value: str) -> str:
    """The URL as a user may see it: ``user:password@`` and anything past 200 characters cut."""
    scheme, sep, rest = value.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = "***@" + rest.split("@", 1)[1]
    return (scheme + sep + rest)[:200]


def _check_file(var: str, where: str, named: bool) -> None:
    """A config or credentials file that exists must be a regular file under :data:`FILE_CAP`."""
    path = os.path.expanduser(where)
    field = var if named else f"{var} (default {where})"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return  # botocore reads no file then, as AWS's tools do
    except OSError as err:
        raise BadInput(field, path, f"a file smmpi can read ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(field, path, "a regular file (not a device, FIFO or folder)")
    if info.st_size > FILE_CAP:
        raise BadInput(field, path, f"a file of at most {FILE_CAP // 1024} KiB")
    _check_ini(field, path)


def _check_ini(field: str, path: str) -> None:
    """The file parses as AWS's tools parse it (botocore's own parser)."""
    try:
        from botocore.configloader import raw_config_parse
        from botocore.exceptions import BotoCoreError
    except ImportError:
        return
    try:
        raw_config_parse(path)
    except (BotoCoreError, UnicodeDecodeError):
        raise BadInput(field, path, "an INI file as `aws configure` writes it") from None


def _check_profile() -> None:
    """A named profile (``AWS_PROFILE``) must exist in the config or credentials file."""
    var = "AWS_PROFILE" if os.environ.get("AWS_PROFILE") else "AWS_DEFAULT_PROFILE"
    profile = os.environ.get(var)
    if not profile:
        return
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:
        return
    try:
        profiles = botocore.session.Session().available_profiles
    except botocore.exceptions.BotoCoreError as err:
        raise BadSetting(f"invalid AWS config: {str(err).splitlines()[0][:200]}") from None
    if profile not in profiles:
        have = ", ".join(sorted(profiles)[:10]) or "none"
        raise BadInput(var, profile, f"a profile in the AWS config or credentials file ({have})")
