"""Two threads sharing the GIL, for bench/python_gil.py (issue 34's case).

The main thread spins in small_a and small_b; the "counter" thread counts
words into a dict (count_words) and gives the GIL up after every round with
time.sleep(0) (the counter_thread line holding the sleep), so it waits for
the GIL most of the time. Usage: gil_counter.py SECONDS (default 8).
"""
import sys
import threading
import time


def count_words(d, words):
    for w in words:
        d[w] = d.get(w, 0) + 1


def counter_thread(stop):
    words = [str(i % 97) for i in range(200)]
    d = {}
    while not stop.is_set():
        count_words(d, words)
        time.sleep(0)


def small_a(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def small_b(n):
    s = 0
    for i in range(n):
        s ^= i
    return s


def main_loop(seconds):
    end = time.time() + seconds
    while time.time() < end:
        small_a(2000)
        small_b(2000)


def main():
    stop = threading.Event()
    t = threading.Thread(target=counter_thread, args=(stop,), name="counter")
    t.start()
    try:
        main_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 8)
    finally:
        stop.set()
        t.join()


if __name__ == "__main__":
    main()
