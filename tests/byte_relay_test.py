#!/usr/bin/env python3
"""bench/byte_relay.py counts exactly what crosses it, both ways, and
passes it unchanged: an HTTP/1.1-like exchange on a kept-alive connection
(a request, its answer, another request) and a sender that half-closes
after its request and still gets the whole answer, against a real server
socket on 127.0.0.1. Standard library only; about a second.
"""
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from byte_relay import ByteRelay  # noqa: E402


def fail(msg):
    print("byte_relay_test: " + msg, file=sys.stderr)
    sys.exit(1)


def recv_exactly(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def serve(listener, answers):
    """Each connection: reads a 4-byte length and that many bytes, answers
    with answers[len]; until the sender closes."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            while True:
                head = recv_exactly(conn, 4)
                if len(head) < 4:
                    break
                body = recv_exactly(conn, int.from_bytes(head, "big"))
                conn.sendall(answers(body))


def main():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    answer = lambda body: body[::-1] * 3  # a different size each way
    threading.Thread(target=serve, args=(listener, answer), daemon=True).start()
    relay = ByteRelay(listener.getsockname()[1])
    sent = got = 0
    bodies = [os.urandom(100_000), os.urandom(7), os.urandom(1_000_000)]
    with socket.create_connection(("127.0.0.1", relay.port)) as s:
        for body in bodies[:2]:
            s.sendall(len(body).to_bytes(4, "big") + body)
            back = recv_exactly(s, 3 * len(body))
            if back != answer(body):
                fail("an answer came back changed through the relay")
            sent, got = sent + 4 + len(body), got + len(back)
    with socket.create_connection(("127.0.0.1", relay.port)) as s:
        body = bodies[2]
        s.sendall(len(body).to_bytes(4, "big") + body)
        s.shutdown(socket.SHUT_WR)  # the answer must still arrive whole
        back = recv_exactly(s, 3 * len(body) + 1)
        if back != answer(body):
            fail(f"after a half-close: {len(back)} bytes back, {3 * len(body)} expected")
        sent, got = sent + 4 + len(body), got + len(back)
    for _ in range(100):
        snap = relay.snapshot()
        if (snap["up"], snap["down"]) == (sent, got):
            break
        threading.Event().wait(0.02)
    if snap != {"up": sent, "down": got, "connections": 2}:
        fail(f"counted {snap}, sent up {sent}, down {got} on 2 connections")
    relay.close()
    listener.close()
    print(f"byte_relay_test: {sent} bytes up, {got} down on 2 connections, counted exactly")


if __name__ == "__main__":
    main()
