"""Judging a guest's results on the host: the verifier figures from
`ehprof check`, and the completeness of fio's stacks per thread, by
../shared/eval/stackcheck.py when it is there."""
import collections
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
STARTUP_SHARE = 0.35


def find_stackcheck():
    for p in (os.environ.get("EHPROF_STACKCHECK", ""),
              os.path.join(REPO, "..", "shared", "eval", "stackcheck.py")):
        if p and os.path.exists(p):
            return os.path.abspath(p)
    return None


def parse_check(text):
    """Per program: verifier-processed instructions; plus the features line
    and the reason when ehprof cannot run."""
    out = {"programs": {}, "missing": [], "error": None}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0].startswith("ehprof_") and f[1].isdigit():
            out["programs"][f[0]] = int(f[1])
        elif len(f) >= 3 and f[-1] == "NO":
            out["missing"].append(" ".join(f[:-2]))
        elif line.startswith("user walk:"):
            out["walk"] = "tail calls" if "tail calls" in line else "bpf_loop"
            out["walk_line"] = line.split(":", 1)[1].strip()
        elif line.startswith("ehprof cannot run here:"):
            out["error"] = line.split(":", 1)[1].strip()
    return out


def split_by_thread(dump):
    """perf-script blocks grouped by (comm, tid), in order."""
    blocks = collections.defaultdict(list)
    with open(dump, errors="replace") as f:
        text = f.read()
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        head = block.lstrip("\n").split("\n", 1)[0].split()
        if len(head) < 2:
            continue
        blocks[(head[0], head[1])].append(block.strip("\n"))
    return blocks


def in_startup(block):
    """Whether a sample's outermost frame is ld.so's (the dynamic loader
    still at work before main)."""
    frames = [l for l in block.split("\n")[1:] if l.strip()]
    return bool(frames) and "/ld-linux" in frames[-1]


def in_own_program(block, comm):
    """Whether a sample has a frame in the executable its thread is named
    after (perf-script's "(/usr/bin/fio)" for comm fio)."""
    tail = f"/{comm})"
    return any(l.rstrip().endswith(tail) for l in block.split("\n")[1:])


RE_FRAME = re.compile(r"^\s*([0-9a-f]+) .*\((/[^()]*)\)\s*$")
RE_FDE = re.compile(r" FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)")
RE_CIE = re.compile(r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE ")


def ra_undefined(path, _cache={}):
    """[start, end) ranges of `path` where binutils' CFI interpreter
    (readelf --debug-dump=frames-interp) says the return address is
    undefined: DWARF's mark for the bottom of a stack (_start, clone3)."""
    if path in _cache:
        return _cache[path]
    r = subprocess.run(["readelf", "--wide", "--debug-dump=no-follow-links",
                        "--debug-dump=frames-interp", path], capture_output=True, text=True,
                       errors="replace")
    ranges, cie_ra, rows, fde, ra_col, cie = [], {}, [], None, None, None

    def close():
        if fde is not None:
            start, end, ras = fde[0], fde[1], rows or [(fde[0], cie_ra.get(fde[2]))]
            for i, (loc, ra) in enumerate(ras):
                stop = ras[i + 1][0] if i + 1 < len(ras) else end
                if ra == "u" and loc < stop:
                    ranges.append((max(loc, start), min(stop, end)))
    for line in r.stdout.splitlines():
        m_fde, m_cie = RE_FDE.search(line), RE_CIE.match(line)
        if m_fde or m_cie:
            close()
            rows, ra_col = [], None
            fde = (int(m_fde.group(2), 16), int(m_fde.group(3), 16), int(m_fde.group(1), 16)) \
                if m_fde else None
            cie = int(m_cie.group(1), 16) if m_cie else None
        elif line.startswith("   LOC"):
            cols = line.split()
            ra_col = cols.index("ra") if "ra" in cols else None
        elif ra_col is not None and re.match(r"^[0-9a-f]{16} ", line):
            cells = re.sub(r" \(\w+\)", "", line).split()
            ra = cells[ra_col] if ra_col < len(cells) else None
            if fde is not None:
                rows.append((int(cells[0], 16), ra))
            elif cie is not None:
                cie_ra[cie] = ra
    close()
    _cache[path] = sorted(ranges)
    return _cache[path]


def bottom_frame_share(blocks):
    """Without stackcheck: the share of samples whose outermost frame's
    (ELF) address lies where readelf's CFI says the return address is
    undefined, in the file perf-script names: an outside judge of where a
    stack ends, by address, not by ehprof's own symbol names."""
    done = 0
    for b in blocks:
        frames = [l for l in b.split("\n")[1:] if l.strip()]
        m = RE_FRAME.match(frames[-1]) if frames else None
        if m and os.path.exists(m.group(2)):
            addr = int(m.group(1), 16)
            if any(s <= addr < e for s, e in ra_undefined(m.group(2))):
                done += 1
    return 100.0 * done / len(blocks) if blocks else 0.0


def stackcheck(path, tool):
    r = subprocess.run([sys.executable, tool, "--json", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"stackcheck {path}: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


def judge_record(dump, workdir, skip_first=False):
    """Completeness of the whole run and of the thread with most samples
    (fio's forked job process: ld.so's start-up, which has no CFI for its
    _start, belongs to the parent). skip_first: the job is never the first
    thread of the dump (the command's own process)."""
    blocks = split_by_thread(dump)
    if not blocks:
        return {"samples": 0}
    tool = find_stackcheck()
    # The job process is the thread with most samples in the program's own
    # code past ld.so's start-up (outermost frame not in ld.so): on a guest
    # whose 9p reads are slow (5.10) the parent's library loading can
    # outweigh the 4 s job, and its samples in libraries' constructors whose
    # stacks could not be read do not end in ld.so.
    candidates = list(blocks.items())[1:] if skip_first and len(blocks) > 1 else blocks.items()

    def job_weight(kv):
        (comm_, _), blocks_ = kv
        steady_ = [b for b in blocks_ if not in_startup(b)]
        return (sum(1 for b in steady_ if in_own_program(b, comm_)), len(steady_))
    (comm, tid), job = max(candidates, key=job_weight)
    # The job thread's first samples can beat user space's first read of
    # its maps ("process not yet known": slow under TCG, slower on a busy
    # host); its steady state is judged on the samples after the first
    # STARTUP_SHARE of them, in time order, and the whole thread reported too.
    steady = job[int(len(job) * STARTUP_SHARE):]
    job_path = os.path.join(workdir, f"job-{tid}.perf-script")
    steady_path = os.path.join(workdir, f"job-{tid}-steady.perf-script")
    for path, blocks_ in ((job_path, job), (steady_path, steady)):
        with open(path, "w") as f:
            f.write("\n\n".join(blocks_) + "\n")
    out = {"samples": sum(len(v) for v in blocks.values()), "job": {"comm": comm, "tid": tid,
                                                                   "samples": len(job)}}
    if tool:
        out["judge"] = "stackcheck.py"
        whole = stackcheck(dump, tool)
        per = stackcheck(job_path, tool)
        st = stackcheck(steady_path, tool)
        out["complete"] = whole.get("complete_pct")
        out["job"].update({"complete_all": per.get("complete_pct"), "complete": st.get("complete_pct"),
                           "callsite": per.get("callsite_pct"), "depth": per.get("mean_user_depth")})
    else:
        out["judge"] = "outermost frame where readelf's CFI has ra undefined (stackcheck.py not found)"
        out["complete"] = bottom_frame_share([b for v in blocks.values() for b in v])
        out["job"]["complete_all"] = bottom_frame_share(job)
        out["job"]["complete"] = bottom_frame_share(steady)
    return out


def judge_offcpu(folded):
    """The blocked nanoseconds of offcpu_sleep's complete sleep_a and sleep_b
    stacks (root first, from _start) and b:a, which must be 3."""
    a = b = other = 0
    with open(folded, errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            ns = int(count)
            full = stack.startswith("offcpu_sleep;_start;")
            if full and ";main;sleep_loop;sleep_a;" in stack:
                a += ns
            elif full and ";main;sleep_loop;sleep_b;" in stack:
                b += ns
            elif "sleep_a" in stack or "sleep_b" in stack:
                other += ns  # a sleep whose stack did not reach _start
    return {"a_ns": a, "b_ns": b, "incomplete_ns": other,
            "b_to_a": round(b / a, 3) if a else None}


def write_results(out, result, md):
    """matrix.json and matrix.md into out; the table printed."""
    with open(os.path.join(out, "matrix.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out, "matrix.md"), "w") as f:
        f.write(md + "\n")
    print(md)


def exit_on(problems_found, name):
    """Each problem printed as FAIL, and exit 1 if any."""
    for p in problems_found:
        print("FAIL " + p)
    if problems_found:
        sys.exit(1)
    print(f"{name}: every expectation holds")


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def first_line(text, pattern):
    for line in text.splitlines():
        if re.search(pattern, line):
            return line.strip()
    return ""
