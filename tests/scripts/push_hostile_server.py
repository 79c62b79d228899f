#!/usr/bin/python3
"""A hostile ingest endpoint, on loopback: every POST is answered with STATUS and
a body of terminal escape sequences (a title change, a screen clear, a
right-to-left override) followed by 60 MB. Prints the port it listens on, then
serves until killed.

Usage: push_hostile_server.py STATUS
"""
import http.server
import os
import sys

STATUS = int(sys.argv[1])
HEAD = b"\x1b]0;owned\x07\x1b[2J\xe2\x80\xaeevil"
CHUNK = b"A" * (1 << 20)
CHUNKS = 60


class Hostile(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(STATUS)
        self.send_header("Content-Length", str(len(HEAD) + CHUNKS * len(CHUNK)))
        self.end_headers()
        try:
            self.wfile.write(HEAD)
            for _ in range(CHUNKS):
                self.wfile.write(CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
os.write(sys.stdout.fileno(), b"%d\n" % server.server_address[1])
server.serve_forever()
