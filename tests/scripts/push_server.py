#!/usr/bin/python3
"""A stand-in for a Pyroscope ingest endpoint, on loopback: every POST /ingest is
saved as DIR/N.query (its query string) and DIR/N.pb.gz (its multipart "profile"
field), and answered 200. Prints the port it listens on, then serves until killed.

Usage: push_server.py DIR
"""
import email.parser
import email.policy
import http.server
import os
import sys

DIR = sys.argv[1]


class Ingest(http.server.BaseHTTPRequestHandler):
    count = 0

    def do_POST(self):
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if path != "/ingest":
            self.send_response(404)
            self.end_headers()
            return
        head = "Content-Type: %s\r\n\r\n" % self.headers.get("Content-Type", "")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head.encode() + body)
        profile = None
        for part in message.iter_parts() if message.is_multipart() else []:
            if part.get_param("name", header="content-disposition") == "profile":
                profile = part.get_payload(decode=True)
        if profile is None:
            self.send_response(400)
            self.end_headers()
            return
        Ingest.count += 1
        with open(os.path.join(DIR, "%d.query" % Ingest.count), "w") as f:
            f.write(query)
        with open(os.path.join(DIR, "%d.pb.gz" % Ingest.count), "wb") as f:
            f.write(profile)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Ingest)
# One write of the whole line: the test reads it and closes the pipe, and with
# PYTHONUNBUFFERED print() writes the port and its newline apart (the second write
# then fails with EPIPE and the server dies before the profiler's first push).
os.write(sys.stdout.fileno(), b"%d\n" % server.server_address[1])
server.serve_forever()
