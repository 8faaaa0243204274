"""The TensorFlow images' shell: hyperparameters that break the container's mpirun line.

The TensorFlow images run sagemaker-training 4.8.3 (sagemaker-tensorflow-training 20.5.0 pins
``<=4.8.3``). It starts its mpirun line through ``/bin/sh`` (dash, in the images):
``process.run_async`` joins the argv with spaces and calls ``asyncio.create_subprocess_shell``,
which the TensorFlow toolkit's ``capture_error=True`` selects; and every hyperparameter is on
that line unquoted, as ``--NAME VALUE`` (``mapping.to_cmd_args``). Of what a shell acts on,
these characters fail the job (dash, a value in the middle of the line, as the line has it):
- ``'``, ``"`` and the backquote start a quotation that no other closes: ``Syntax error:
  Unterminated quoted string`` (exit 2, before mpirun starts);
- ``(`` and ``)``: ``Syntax error: "(" unexpected``;
- ``;``, ``&``, ``|`` and a newline end the mpirun command there: mpirun runs without the rest of
  its arguments, and the shell runs the rest as another command (``not found``, exit 127);
- ``<`` and ``>`` redirect mpirun's input or output to a file (``cannot open``; at the end of
  the line, a syntax error; otherwise the job's output goes to a file, not to its log);
- ``${`` without a closing ``}``: ``Bad substitution``.
Other characters a shell acts on (a space or tab, ``$NAME``, ``\\``, ``*``, ``#``, ``~``) do
not fail the job: they change the value the program gets (docs/TOOLKIT.md lists this).
sagemaker-training 5.1.4 (the PyTorch images) starts the same argv with
``create_subprocess_exec``: no shell, so a PyTorch job takes any value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from smmpi.errors import BadInput

BREAKING = "'\"`();&|<>\n"
_OPEN_BRACE = re.compile(r"\$\{(?![^{}\s]+\})")

CAUSE = (
    "the TensorFlow images' toolkit (sagemaker-training 4.8.3) runs the mpirun line through "
    "/bin/sh with every hyperparameter unquoted, and the shell fails on it "
    "(/bin/sh: Syntax error: Unterminated quoted string) or runs something else"
)
FIX = (
    "pass such text in a file of the source dir or with --env, or use --framework pytorch "
    "(its toolkit runs no shell)"
)


def breaking(text: str) -> list[str]:
    """What in ``text`` fails the TensorFlow images' shell (characters, or ``${``)."""
    found = sorted({c for c in text if c in BREAKING})
    if _OPEN_BRACE.search(text):
        found.append("${")
    return found


def check_shell_words(framework: str, hyperparameters: Mapping[str, str]) -> None:
    """Refuse, in a TensorFlow job, a hyperparameter name or value that fails its shell."""
    if framework != "tensorflow":
        return
    for key, value in hyperparameters.items():
        for field, text in (("hyperparameter", key), (f"hyperparameter {key}", value)):
            found = breaking(text)
            if found:
                shown = " ".join(repr(c) for c in found)
                raise BadInput(
                    field,
                    text,
                    f"in a TensorFlow job, text without {shown}: {CAUSE}, so the job fails "
                    f"on SageMaker; {FIX}",
                )
