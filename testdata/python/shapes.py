"""Python programs of known shapes for ehprof's Python frames (run one by
name: python3 shapes.py NAME SECONDS). Each spends its time in a known
function, at known lines, in a known call chain."""
import sys
import threading
import time


def leaf_loop(n):
    total = 0
    for i in range(n):
        total += i * i  # HOT-LINE
    return total


def recurse(depth):
    if depth == 0:
        return leaf_loop(20000)
    return recurse(depth - 1)


def run_recursion(deadline):
    while time.monotonic() < deadline:
        recurse(100)


def run_deep(deadline):
    # About 50 Python frames: <module>, main, run_deep, 47 recurse, leaf_loop.
    while time.monotonic() < deadline:
        recurse(46)


def hot_a(deadline):
    x = 0
    while time.monotonic() < deadline:
        for i in range(2000):
            x += i  # A-LINE
    return x


def hot_b(deadline):
    y = 1.0
    while time.monotonic() < deadline:
        for i in range(2000):
            y = y * 1.0000001 + 1  # B-LINE
    return y


def run_threads(deadline):
    ta = threading.Thread(target=hot_a, args=(deadline,), name="thread-a")
    tb = threading.Thread(target=hot_b, args=(deadline,), name="thread-b")
    ta.start()
    tb.start()
    ta.join()
    tb.join()


def squares():
    i = 0
    while True:
        yield i * i  # GEN-LINE
        i += 1


def run_generator(deadline):
    gen = squares()
    while time.monotonic() < deadline:
        for _ in range(1000):
            next(gen)


def sort_key(v):
    return (v * 7919) % 1009  # KEY-LINE


def run_sorted(deadline):
    data = list(range(5000))
    while time.monotonic() < deadline:
        sorted(data, key=sort_key)


class Shape:
    def method(self, n):
        s = 0
        for i in range(n):
            s += i ^ 5  # METHOD-LINE
        return s


def run_method(deadline):
    c = Shape()
    while time.monotonic() < deadline:
        c.method(10000)


def main():
    name = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    deadline = time.monotonic() + seconds
    globals()["run_" + name](deadline)


if __name__ == "__main__":
    main()
