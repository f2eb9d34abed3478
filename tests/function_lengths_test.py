#!/usr/bin/env python3
"""scripts/function_lengths.py on a made-up tree: the lengths it measures
for the C++ that fools simple brace counting (braces in comments, strings,
raw strings and character literals; a constructor's brace initializers;
lambdas; class-scope and templated definitions; a namespace-scope lambda,
which is no definition), and --check failing on an over-long function,
passing when the allow-list names it, failing on a stale entry."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                      "function_lengths.py")

SOURCE = r'''#include "x.h"
// a comment { with a brace
namespace ns {
namespace {

const auto kLambda = [](int x) {
  return x;
};

int Short(int a) {
  const char* s = "}}}";
  const char c = '}';
  return a + (s[0] == c);
}

}  // namespace

class Widget {
 public:
  Widget(int a)
      : a_{a}, b_{a + 1} {
    /* } */
  }
  template <typename T = int>
  T Get() const {
    auto f = [&] { return T(a_); };
    return f();
  }
 private:
  int a_, b_;
};

std::string Raw() {
  return R"x(
}}}
)x";
}

void Long() {
FILLER}

}  // namespace ns
'''


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "lib")
        os.mkdir(root)
        with open(os.path.join(root, "x.cc"), "w") as f:
            f.write(SOURCE.replace("FILLER", "  int x = 0;\n" * 40))
        code, out = run("--top", "10", root)
        rows = {line.split()[2]: (int(line.split()[0]), line.split()[1].rsplit(":", 1)[1])
                for line in out.splitlines()}
        want = {"Long": (42, "39"), "Short": (5, "10"),
                "Widget::Widget": (4, "20"), "Widget::Get": (5, "24"), "Raw": (5, "33")}
        expect(code == 0, f"listing failed: {out}")
        for name, (length, line) in want.items():
            expect(rows.get(name) == (length, line),
                   f"{name}: want {length} lines at line {line}, got {rows.get(name)}")
        expect(set(rows) == set(want), f"found {sorted(rows)}, want {sorted(want)}")

        code, out = run("--max-lines", "40", "--check", "--allow", os.path.join(d, "none"), root)
        expect(code == 1 and "x.cc:39: Long is 42 lines (limit 40)" in out,
               f"--check over the limit: exit {code}: {out}")
        allow = os.path.join(d, "allow.txt")
        rel = os.path.relpath(os.path.join(root, "x.cc"),
                              os.path.normpath(os.path.join(os.path.dirname(SCRIPT), "..")))
        with open(allow, "w") as f:
            f.write(f"# justified\n{rel} Long  generated table\n")
        code, out = run("--max-lines", "40", "--check", "--allow", allow, root)
        expect(code == 0, f"--check with Long allowed: exit {code}: {out}")
        code, out = run("--max-lines", "60", "--check", "--allow", allow, root)
        expect(code == 1 and "names no function over the limit" in out,
               f"--check with a stale entry: exit {code}: {out}")

    for f in failures:
        print(f"function_lengths_test: {f}")
    if not failures:
        print("function_lengths_test: lengths, --check and the allow-list as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
