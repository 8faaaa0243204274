"""The test cluster's files, as text: slurm.conf, the script that starts the daemons, the
wrappers that run SLURM's commands on the controller. Pure functions of the folder and shape."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

CONTROLLER = "slurmctl"
PARTITION = "debug"
#: The commands users run, each wrapped to run on the controller host.
COMMANDS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct", "srun", "salloc")
DAEMONS = ("munged", "slurmctld", "slurmd")


@dataclass(frozen=True)
class Shape:
    folder: Path
    nodes: int
    cpus: int

    def node(self, k: int) -> str:
        return f"node{k}"

    @property
    def hosts(self) -> tuple[str, ...]:
        return (CONTROLLER, *(self.node(k) for k in range(1, self.nodes + 1)))

    def path(self, *parts: str) -> str:
        return str(self.folder.joinpath(*parts))

    @property
    def socket(self) -> str:
        return self.path("munge", "munge.socket")

    @property
    def jobcomp(self) -> str:
        """slurmctld's record of each job's end, a line as it ends (``jobcomp/filetxt``)."""
        return self.path("log", "jobcomp.txt")


def slurm_conf(s: Shape) -> str:
    """A cluster of ``nodes`` nodes with ``cpus`` CPUs each, every file in the folder."""
    nodes = f"node[1-{s.nodes}]" if s.nodes > 1 else "node1"
    lines = [
        "ClusterName=smmpi",
        f"SlurmctldHost={CONTROLLER}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={s.socket}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={s.path('state')}",
        f"SlurmdSpoolDir={s.path('spool')}/%n",
        f"SlurmctldPidFile={s.path('state', 'slurmctld.pid')}",
        f"SlurmdPidFile={s.path('spool')}/slurmd-%n.pid",
        f"SlurmctldLogFile={s.path('log', 'slurmctld.log')}",
        f"SlurmdLogFile={s.path('log')}/slurmd-%n.log",
        f"TmpFS={s.path('tmp')}/%n",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/affinity",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={s.jobcomp}",
        "MpiDefault=none",
        "MailProg=/bin/true",
        # a batch job is scheduled at slurmctld's next tick (1 s) rather than after its
        # default 3 s batch delay, and backfill looks every second, not every 30
        "SchedulerParameters=batch_sched_delay=0,bf_interval=1",
        "KillWait=2",
        "ReturnToService=2",
        "MinJobAge=300",
        "EnforcePartLimits=ALL",
        "SlurmdParameters=config_overrides",
        "CommunicationParameters=NoCtldInAddrAny",
        f"NodeName={nodes} CPUs={s.cpus} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={nodes} Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def start_script(s: Shape, sbin: dict[str, str]) -> str:
    """What the controller host runs: munged, slurmctld, then each node's slurmd through the
    launch agent; SIGTERM stops them all, and the script ends when they have."""
    q = shlex.quote
    conf = q(s.path("slurm.conf"))  # on each daemon's command line: whose daemon it is
    munged = [
        sbin["munged"],
        "-F",
        "--force",
        f"--key-file={s.path('munge', 'munge.key')}",
        f"--socket={s.socket}",
        f"--pid-file={s.path('munge', 'munged.pid')}",
        f"--log-file={s.path('log', 'munged.log')}",
        f"--seed-file={s.path('munge', 'munged.seed')}",
    ]
    lines = [
        "#!/bin/sh",
        f"export SLURM_CONF={conf}",
        'pids=""',
        "stop() { kill $pids 2>/dev/null; wait; exit 0; }",
        "trap stop TERM INT HUP",
        f'{shlex.join(munged)} & pids="$pids $!"',
        f"i=0; while [ ! -S {q(s.socket)} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        f'{q(sbin["slurmctld"])} -D -c -f {conf} & pids="$pids $!"',
    ]
    agent = q(s.path("agent"))
    for k in range(1, s.nodes + 1):
        argv = [sbin["slurmd"], "-D", "-N", s.node(k), "-f", s.path("slurm.conf")]
        slurmd = f"exec {shlex.join(argv)}"
        lines.append(f'{agent} {s.node(k)} {q(slurmd)} & pids="$pids $!"')
    lines.append("wait")
    return "\n".join(lines) + "\n"


def wrapper(s: Shape, command: str, real: str, machine_net: str) -> str:
    """``bin/COMMAND``: on this machine, ``COMMAND`` run on the controller host in the same
    folder and environment; inside the cluster (a job's script), the command itself."""
    q = shlex.quote
    conf = q(s.path("slurm.conf"))
    return f"""#!/bin/sh
if [ "$(readlink /proc/self/ns/net)" != {q(machine_net)} ]; then
  SLURM_CONF={conf} exec {q(real)} "$@"
fi
q() {{ printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\\\\\''/g")"; }}
line="cd $(q "$PWD") 2>/dev/null || cd /; SLURM_CONF={conf} exec {q(real)}"
for word in "$@"; do line="$line $(q "$word")"; done
exec {q(s.path("agent"))} {CONTROLLER} "$line"
"""
