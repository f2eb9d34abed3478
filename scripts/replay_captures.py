#!/usr/bin/env python3
"""Records the walker-replay captures in testdata/captures/ (needs root).

Each workload runs under `ehprof record -F 299 --verify=2 --save-captures DIR`,
which completes each capture while its files are at hand: the table map
entries the walk reads and libdwfl's frames of the same stack go into it
(agent/replay/capture_tables.h). Of its captures one is picked by what it
is there to show (below), its testdata program paths are rewritten to
@testdata/NAME (names only: the build tree differs between machines) and it
is written to testdata/captures/NAME.capture. The replay test
(tests/replay_test.cc) replays each from its own entries, without root or
the captured files, on any machine; record again only to capture something
new (or after a change of the table format or the capture format).

usage: scripts/replay_captures.py BUILD_DIR [NAME...]
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXACT = 1 << 63
ADDR_MASK = (1 << 62) - 1
END_OF_STACK = 1

CLANG_SOURCE = r"""
#include <map>
#include <regex>
#include <string>
#include <vector>
template <int N> struct Depth { static int f(std::map<std::string, int>& m) { return Depth<N - 1>::f(m) + m.size(); } };
template <> struct Depth<0> { static int f(std::map<std::string, int>&) { return 0; } };
int main() {
  std::map<std::string, int> m;
  std::regex r("(a|b)*c[0-9]+");
  std::vector<std::string> v{"abc1", "c2"};
  for (auto& s : v) m[s] = std::regex_match(s, r);
  return Depth<120>::f(m);
}
"""


def parse(path):
    c = {"mappings": [], "path": path}
    with open(path) as f:
        for line in f:
            key, _, rest = line.rstrip("\n").partition(" ")
            if key == "mapping":
                start, end, bias, _table, _build_id, mpath = rest.split(" ", 5)
                c["mappings"].append((int(start, 16), int(end, 16), int(bias, 16), mpath))
            elif key == "walk":
                words = [int(w, 16) for w in rest.split()]
                c["stop"], c["frames"] = words[0], words[1:]
            elif key == "libdwfl":
                c["libdwfl"] = [int(w, 16) for w in rest.split()]
            elif key == "stack":
                break
    return c


def mapping_of(c, addr):
    for m in c["mappings"]:
        if m[0] <= addr < m[1]:
            return m
    return None


def section_range(binary, name):
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 4 and f[1] == name:
            addr, size = int(f[3], 16), int(f[5], 16)
            return addr, addr + size
    raise SystemExit(f"{binary} has no {name}")


def complete(c):
    # The kernel's walk reached the end of the stack and libdwfl found the
    # same frames: the capture's expected frames agree (a capture through
    # the vDSO carries the recording machine's vDSO table, libdwfl read it).
    return c["stop"] == END_OF_STACK and [f & ADDR_MASK for f in c["frames"]] == c.get("libdwfl")


def pick_deepest(caps):
    caps = [c for c in caps if complete(c)]
    return max(caps, key=lambda c: len(c["frames"])) if caps else None


def pick_depth(n):
    def pick(caps):
        deep = [c for c in caps if complete(c) and len(c["frames"]) >= n]
        return min(deep, key=lambda c: len(c["frames"])) if deep else None
    return pick


def pick_signal(caps):
    # An exact frame past the leaf: the interrupted pc behind a signal frame.
    for c in caps:
        if complete(c) and any(f & EXACT for f in c["frames"][1:]):
            return c
    return None


def pick_plt(testdata):
    lo, hi = section_range(os.path.join(testdata, "plt_spin"), ".plt")

    def pick(caps):
        for c in caps:
            leaf = c["frames"][0] & ADDR_MASK if c["frames"] else 0
            m = mapping_of(c, leaf)
            if complete(c) and m and m[3].endswith("/plt_spin") and lo <= leaf - m[2] < hi:
                return c
        return None
    return pick


def pick_jit(caps):
    for c in caps:
        m = mapping_of(c, c["frames"][0] & ADDR_MASK) if c["frames"] else None
        if complete(c) and m and (m[3] == "//anon" or not m[3].startswith("/")) and len(c["frames"]) > 3:
            return c
    return None


def workloads(build, tmp):
    td = os.path.join(build, "testdata")
    src = os.path.join(tmp, "deep.cc")
    with open(src, "w") as f:
        f.write(CLANG_SOURCE)
    fio_file = os.path.join(tmp, "fio.dat")
    return {
        "fio": (["fio", "--name=replay", "--ioengine=psync", "--rw=randrw", "--bs=4k", "--size=8m",
                 f"--filename={fio_file}", "--runtime=2", "--time_based"], [], pick_deepest),
        "python3.11": (["/usr/bin/python3.11", "-c",
                        "import json,re\nfor i in range(300000):\n"
                        " json.loads(json.dumps({'a':[i,{'b':str(i)}]})); re.match(r'(a|b)*c', 'ab'*5+'c')"],
                       ["--no-python"], pick_deepest),
        "clang_depth40": (["clang++-14", "-O2", "-std=c++17", "-c", src, "-o", os.path.join(tmp, "deep.o")],
                          [], pick_depth(40)),
        "signal_frame": ([os.path.join(td, "sig_handler"), "2"], [], pick_signal),
        "plt_stub": ([os.path.join(td, "plt_spin"), "2"], [], pick_plt(td)),
        "jit_frame": ([os.path.join(td, "jit_sim"), "2"], [], pick_jit),
    }


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    build = os.path.abspath(sys.argv[1])
    ehprof = os.path.join(build, "ehprof")
    testdata = os.path.join(build, "testdata")
    out_dir = os.path.join(ROOT, "testdata", "captures")
    with tempfile.TemporaryDirectory() as tmp:
        jobs = workloads(build, tmp)
        names = sys.argv[2:] or list(jobs)
        for name in names:
            cmd, extra, pick = jobs[name]
            caps_dir = os.path.join(tmp, name)
            subprocess.run([ehprof, "record", "-F", "299", "--verify=2", "--save-captures", caps_dir,
                            "-o", os.path.join(tmp, name + ".folded"), *extra, "--", *cmd],
                           check=True, stdout=subprocess.DEVNULL)
            caps = [parse(os.path.join(caps_dir, f)) for f in sorted(os.listdir(caps_dir))]
            chosen = pick(caps)
            if not chosen:
                raise SystemExit(f"{name}: none of {len(caps)} captures fits")
            with open(chosen["path"]) as f:
                text = f.read().replace(testdata + "/", "@testdata/")
            dest = os.path.join(out_dir, name + ".capture")
            with open(dest, "w") as f:
                f.write(text)
            print(f"{name}: {len(chosen['frames'])} frames, {os.path.getsize(dest)} bytes, "
                  f"from {len(caps)} captures -> {dest}")


if __name__ == "__main__":
    main()
