"""An instance's own S3 endpoint: a socket on its loopback, handed to smmpi serve, then the start.

``python -m smmpi.platform.instance_endpoint RELAY -- ENTRYPOINT...`` is how an ``@remote``
job's instance starts under ``smmpi serve``. Already in the instance (its network namespace,
a container's capabilities), it listens on ``127.0.0.1:PORT`` of the instance's own loopback,
hands that listening socket to serve over the unix socket ``RELAY`` (``SCM_RIGHTS``), waits
for serve's ``ok`` (serve now answers every connection to it), closes its own copy and
becomes the container's start (``exec``). So the endpoint exists before the job's first
process, nothing of it runs in the instance, and nothing off the machine is reachable: the
address is the instance's loopback, which no other instance and no host shares.
"""

from __future__ import annotations

import array
import os
import socket
import sys

PORT = 9000  # on each instance's own loopback: AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000
VARIABLE = "AWS_ENDPOINT_URL_S3"  # the variable botocore reads the S3 endpoint from
ANSWER_SECONDS = 60.0  # serve acknowledges at once; a loaded machine may take a while


def endpoint_url() -> str:
    return f"http://127.0.0.1:{PORT}"


def _hand_over(relay: str, listener: socket.socket) -> bytes:
    folder = os.open(os.path.dirname(relay) or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(ANSWER_SECONDS)
            # through the folder's descriptor: a socket's path has a length limit
            conn.connect(f"/proc/self/fd/{folder}/{os.path.basename(relay)}")
            fds = array.array("i", [listener.fileno()])
            conn.sendmsg(
                [socket.gethostname().encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
            )
            return conn.recv(64)
    finally:
        os.close(folder)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: instance_endpoint RELAY -- ENTRYPOINT...", file=sys.stderr)
        return 2
    relay, start = argv[0], argv[2:]
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
            listener.bind(("127.0.0.1", PORT))
            listener.listen(128)
            answer = _hand_over(relay, listener)
    except OSError as err:
        answer = f"{err}".encode()
    if answer.strip() != b"ok":
        why = answer.decode(errors="replace").strip() or "no answer"
        print(f"smmpi: {socket.gethostname()}: the job's S3 endpoint: {why}", file=sys.stderr)
        return 125
    os.execvp(start[0], start)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
