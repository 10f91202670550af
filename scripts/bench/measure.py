"""Run one command to completion and measure it: wall time, CPU, peak RSS."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RUN_TIMEOUT = 30 * 60


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class Sample:
    seconds: float  # wall clock
    cpu: float  # user + sys of the process and the children it waited for
    rss_mib: float  # peak RSS of the process or of its largest child
    rc: int
    stdout: str
    stderr: str

    def to_json(self) -> dict[str, float | int]:
        return {"seconds": round(self.seconds, 4), "cpu_s": round(self.cpu, 4), "peak_rss_mib": round(self.rss_mib, 1)}


# Runs one command and reports its wall time and rusage. It is started fresh for each
# command because Linux carries a process's peak RSS across exec: a command forked from
# this script (hundreds of MB after creating 100,000 objects) would report this script's
# size as its own peak. Forked from this small helper, it reports only its own.
_LAUNCHER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss], out)
"""


def process_cpu(pids: list[int]) -> float:
    """User + system seconds the processes `pids` have used so far (/proc/PID/stat; 0 for
    one that is gone): the control plane's own work during a run, read before and after."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def measure(argv: list[str], env: dict[str, str], timeout: float = RUN_TIMEOUT) -> Sample:
    """Run argv to completion; wall time, CPU and peak RSS from os.wait4 in a small launcher."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        launcher = [sys.executable, "-c", _LAUNCHER, str(result), *argv]
        proc = subprocess.Popen(
            launcher, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        rc, seconds, cpu, maxrss = json.loads(result.read_text()) if result.exists() else [-9, timeout, 0.0, 0]
        out.seek(0)
        err.seek(0)
        return Sample(
            seconds=seconds,
            cpu=cpu,
            rss_mib=maxrss / 1024,
            rc=rc,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
        )


def check(sample: Sample, what: str) -> Sample:
    if sample.rc != 0:
        failures = [line for line in sample.stdout.splitlines() if " unfinalized " not in line][-20:]
        raise SystemExit(
            f"{what} failed with exit code {sample.rc}:\n{sample.stderr[-3000:]}" + "\n".join(["", *failures])
        )
    return sample


def med(values: list[float]) -> float:
    return statistics.median(values)
