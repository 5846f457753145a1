"""Read Snakemake's log as it is written and turn it into one progress line per finished job.

``nonolab run`` sends Snakemake's whole output to a log file in the results folder and shows,
instead, a line per job (:class:`JobProgress`). Snakemake's log is text meant for people, not
an interface; the parser depends only on four kinds of line that Snakemake 8 and 9 write (and
that are matched loosely, so that a changed detail costs a progress line, never the run):

* ``rule NAME:`` / ``localrule NAME:`` opens a job block, whose indented ``jobid: N`` and
  ``wildcards: ...`` lines say which job it is;
* ``Finished jobid: N (Rule: NAME)`` (Snakemake 9; ``Finished job N.`` in 8) ends a job;
* ``N of M steps (P%) done`` counts the finished jobs;
* ``Error in rule NAME:`` opens the block of a failed job, whose ``log:`` line names the job's
  own log file.

Nothing here imports Snakemake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_RULE = re.compile(r"^(?:local)?rule (\S+?):\s*$")
_JOBID = re.compile(r"^\s+jobid: (\d+)\s*$")
_WILDCARDS = re.compile(r"^\s+wildcards: (.*?)\s*$")
_FINISHED = re.compile(r"^Finished job(?:id)?:? (\d+)")
_STEPS = re.compile(r"^(\d+) of (\d+) steps \(([^)]*)\) done")
_ERROR = re.compile(r"^Error in rule (\S+?):\s*$")
_LOG = re.compile(r"^\s+log: (.*?)(?: \(check log file\(s\) for error details\))?\s*$")
_NOTHING = re.compile(r"^Nothing to be done")


@dataclass
class FailedJob:
    """A job that Snakemake reported as failed: its rule, wildcards and log files (paths as
    Snakemake printed them, relative to the working directory)."""

    rule: str
    wildcards: str = ""
    logs: list[str] = field(default_factory=list)


@dataclass
class JobProgress:
    """Consume Snakemake's log line by line (:meth:`feed`) and return the progress lines to
    show: ``[ 3/55] ingest`` when a job finishes, with its wildcards when it has some.

    After the run, :attr:`failed` lists the jobs Snakemake reported as failed, :attr:`done` and
    :attr:`total` the last step count, and :attr:`nothing_to_do` whether every output was
    already up to date.
    """

    done: int = 0
    total: int = 0
    nothing_to_do: bool = False
    failed: list[FailedJob] = field(default_factory=list)
    _jobs: dict[str, tuple[str, str]] = field(default_factory=dict)
    _block: str | None = None  # "job" or "error" while reading an indented block
    _rule: str = ""
    _jobid: str | None = None
    _wildcards: str = ""
    _finished: list[str] = field(default_factory=list)

    def _close_block(self) -> None:
        if self._block == "job" and self._jobid is not None:
            self._jobs[self._jobid] = (self._rule, self._wildcards)
        self._block, self._jobid, self._wildcards = None, None, ""

    def feed(self, line: str) -> list[str]:
        """Read one line of Snakemake's log; return the progress lines it completes (none,
        or one per job that the line reports finished)."""
        line = line.rstrip("\r\n")
        if self._block is not None and line.startswith((" ", "\t")):
            if m := _JOBID.match(line):
                self._jobid = m.group(1)
            elif m := _WILDCARDS.match(line):
                self._wildcards = m.group(1)
            elif self._block == "error" and (m := _LOG.match(line)):
                self.failed[-1].logs = [p.strip() for p in m.group(1).split(",") if p.strip()]
            if self._block == "error" and self._wildcards:
                self.failed[-1].wildcards = self._wildcards
            return []
        self._close_block()
        if m := _RULE.match(line):
            self._block, self._rule = "job", m.group(1)
        elif m := _ERROR.match(line):
            self._block = "error"
            self.failed.append(FailedJob(m.group(1)))
        elif m := _FINISHED.match(line):
            self._finished.append(m.group(1))
        elif m := _STEPS.match(line):
            self.done, self.total = int(m.group(1)), int(m.group(2))
            out = [self._line(j) for j in self._finished] or [self._line(None)]
            self._finished = []
            return out
        elif _NOTHING.match(line):
            self.nothing_to_do = True
        return []

    def _line(self, jobid: str | None) -> str:
        rule, wildcards = self._jobs.get(jobid, ("", "")) if jobid is not None else ("", "")
        width = len(str(self.total))
        text = f"[{self.done:>{width}}/{self.total}] {rule or 'job'}"
        return f"{text} ({wildcards})" if wildcards else text


__all__ = ["FailedJob", "JobProgress"]
