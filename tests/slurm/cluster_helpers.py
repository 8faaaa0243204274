"""What the SLURM tests share: the venv's mpirun."""

from __future__ import annotations

import sys
from pathlib import Path

BIN = Path(sys.executable).parent
MPIRUN = str(BIN / "mpirun") if (BIN / "mpirun").exists() else "mpirun"
