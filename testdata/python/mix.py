"""A CPU-bound Python workload whose time splits unevenly over ten
functions (weights 1..10) in two threads, for comparing profilers' shares:
python3 mix.py SECONDS."""
import sys
import threading
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def w1(): return spin(1000)
def w2(): return spin(2000)
def w3(): return spin(3000)
def w4(): return spin(4000)
def w5(): return spin(5000)


class Worker:
    def w6(self): return [i * 2 for i in range(6000)]
    def w7(self): return sorted(range(7000), key=lambda v: -v)
    def w8(self): return sum(i * i for i in range(8000))
    def w9(self): return "".join(str(i) for i in range(9000 // 4))
    def w10(self): return {i: i for i in range(10000)}


def loop(funcs, deadline):
    while time.monotonic() < deadline:
        for f in funcs:
            f()


def main():
    deadline = time.monotonic() + float(sys.argv[1])
    w = Worker()
    t = threading.Thread(target=loop, args=([w.w6, w.w7, w.w8, w.w9, w.w10], deadline))
    t.start()
    loop([w1, w2, w3, w4, w5], deadline)
    t.join()


if __name__ == "__main__":
    main()
