"""A TCP relay that counts the bytes a sender puts on the wire (issue 35):
it listens on 127.0.0.1 (a free port), connects each accepted connection
to the real server, copies both ways unchanged and counts what went each
way, so a profiler's exports (gzipped HTTP/1.1 or gRPC over cleartext
HTTP/2, headers and framing included) are measured as sent, without
decoding them. Standard library only.
"""
import socket
import threading


class ByteRelay:
    """127.0.0.1:port -> target_host:target_port, counting bytes.

    up: bytes from the sender to the server; down: the server's answers;
    connections: accepted so far. snapshot() reads all three at once."""

    def __init__(self, target_port, target_host="127.0.0.1"):
        self.target = (target_host, target_port)
        self.up = self.down = self.connections = 0
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def snapshot(self):
        with self._lock:
            return {"up": self.up, "down": self.down, "connections": self.connections}

    def close(self):
        self._closed = True
        self._listener.close()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()  # the sender sees the server as down, as it would be
                continue
            with self._lock:
                self.connections += 1
            pair = {"open": 2}
            for src, dst, field in ((client, server, "up"), (server, client, "down")):
                threading.Thread(target=self._copy, args=(src, dst, field, pair), daemon=True).start()

    def _copy(self, src, dst, field, pair):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                with self._lock:
                    setattr(self, field, getattr(self, field) + len(data))
        except OSError:
            pass
        finally:
            # Half-close: the other direction may still carry an answer.
            for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
                try:
                    s.shutdown(how)
                except OSError:
                    pass
            with self._lock:
                pair["open"] -= 1
                last = pair["open"] == 0
            if last:
                src.close()
                dst.close()
