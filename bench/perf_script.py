"""What the benches that judge `ehprof record`'s perf-script output share
(bench/real_programs.py, bench/php_real_program.py, bench/php_vs_excimer.py):
recording a command or running processes, and reading the samples back,
each with its comm, thread and frames leaf first, a frame's source line
where --srcline printed one. Standard library only."""
import collections
import re
import subprocess
import sys

Frame = collections.namedtuple("Frame", "symbol dso line")
Sample = collections.namedtuple("Sample", "comm tid frames")

_HEADER = re.compile(r"^(\S.*?)\s+(\d+)(?:/\d+)?\s+\[\d+\]")
_FRAME = re.compile(r"^\s+[0-9a-f]+ (.*) \((.*)\)$")
_SRCLINE = re.compile(r"^\s+(.*):(\d+)$")
_COMPLETE = re.compile(r"user stacks complete \(reached the bottom\): ([0-9.]+)%")


def samples(path):
    """Each sample of a perf-script dump: Sample(comm, tid, [Frame] leaf
    first), a frame's line 0 where no srcline line follows it."""
    comm, tid, frames = None, 0, []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if comm is not None:
                    yield Sample(comm, tid, frames)
                comm, frames = None, []
                continue
            m = _HEADER.match(line)
            if m and not line.startswith(("\t", " ")):
                comm, tid = m.group(1), int(m.group(2))
                continue
            m = _FRAME.match(line)
            if m:
                frames.append(Frame(m.group(1), m.group(2), 0))
                continue
            m = _SRCLINE.match(line)
            if m and frames:
                frames[-1] = frames[-1]._replace(line=int(m.group(2)))
    if comm is not None:
        yield Sample(comm, tid, frames)


def record(ehprof, out, target, hz=499, flags=(), cwd=None, env=None, timeout=600):
    """`ehprof record -F hz FLAGS -o out` of target: a command (a list) or
    a pid's running process (an int, for -d seconds in flags). Returns
    ehprof's stderr; a failed record ends the bench, saying why."""
    what = ["-p", str(target)] if isinstance(target, int) else ["--", *target]
    r = subprocess.run([ehprof, "record", "-F", str(hz), *flags, "-o", out, *what], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        name = target if isinstance(target, int) else " ".join(target[:2])
        sys.exit(f"{sys.argv[0]}: {name}: ehprof record failed:\n{r.stderr[-2000:]}")
    return r.stderr


def complete_pct(stderr):
    """ehprof's own "user stacks complete" share, 0 when it printed none."""
    m = _COMPLETE.search(stderr)
    return float(m.group(1)) if m else 0.0


def is_php(dso):
    """A PHP frame: a user function's (its script) or a [php] one."""
    return dso == "[php]" or dso.endswith(".php")
