#!/usr/bin/env python3
"""A FastCGI request to PHP-FPM, as a web server would send it (for the
FPM tests: tests/record_php_priv_test.cc): fcgi_get.py SOCKET SCRIPT
[QUERY]; prints the response's stdout, exits 0 once FPM ends the request."""
import socket
import struct
import sys


def record(kind, body, request=1):
    return struct.pack(">BBHHBx", 1, kind, request, len(body), 0) + body


def pair(name, value):
    n, v = name.encode(), value.encode()
    size = lambda b: bytes([len(b)]) if len(b) < 128 else struct.pack(">I", len(b) | 0x80000000)
    return size(n) + size(v) + n + v


def main():
    path, script = sys.argv[1], sys.argv[2]
    query = sys.argv[3] if len(sys.argv) > 3 else ""
    params = b"".join(pair(k, v) for k, v in (("SCRIPT_FILENAME", script), ("REQUEST_METHOD", "GET"),
                                              ("QUERY_STRING", query), ("SCRIPT_NAME", "/" + script)))
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(120)
    s.connect(path)
    s.sendall(record(1, struct.pack(">HB5x", 1, 0)) + record(4, params) + record(4, b"") + record(5, b""))
    data = b""
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        while len(data) >= 8:
            _, kind, _, length, pad = struct.unpack(">BBHHB", data[:7])
            if len(data) < 8 + length + pad:
                break
            body, data = data[8:8 + length], data[8 + length + pad:]
            if kind == 6:
                out += body
            if kind == 3:
                sys.stdout.write(out.decode(errors="replace"))
                return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
