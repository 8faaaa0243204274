"""Run a request whose ``sagemaker_program`` is NAME, with FILE as its whole code, here.

    python request_driver.py NAME FILE exact|fast

The request is ``smmpi submit --dry-run --json``'s for a PyTorch 2.8 job of 2 x 2, with its
program renamed: how a job submitted by other means (``run --from-job``, serve) reaches the
local runner. Exits with the run's exit code; smmpi's lines go to stderr.
"""

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

from smmpi.errors import SmmpiError
from smmpi.runners.base import RunOptions
from smmpi.runners.registry import runner

name, program, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
argv = ["smmpi", "submit", str(Path(__file__).with_name("probe_view.py")), "-N", "2", "-n", "2"]
argv += ["--dry-run", "--json", "--role", "arn:aws:iam::123456789012:role/x"]
argv += ["--region", "us-west-2", "--job-name", f"request-{mode}", "--framework", "pytorch"]
argv += ["--framework-version", "2.8.0", "--py-version", "py312"]
request = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
request = request["request"]
request["HyperParameters"]["sagemaker_program"] = json.dumps(name)
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w:gz") as tar:
    data = program.read_bytes()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o755
    tar.addfile(info, io.BytesIO(data))


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


try:
    job = runner("local").run(
        request, raw.getvalue(), RunOptions(exact=mode == "exact", progress=say)
    )
except SmmpiError as err:
    say(f"smmpi: {err}")
    sys.exit(err.exit_code)
sys.exit(job.exit_code)
