#!/usr/bin/env python3
"""A registry proxy that makes image pulls slow: forwards every request to the registry at
UPSTREAM (host:port, plain HTTP) and holds the blob downloads of skopeo (User-Agent
skopeo/... or containers/...) for DELAY seconds first. RSL's own registry client (admission) is not held.
Prints its port on the first line of stdout.

Usage: slow_proxy.py UPSTREAM DELAY
"""
import http.client
import http.server
import sys
import time

UPSTREAM = sys.argv[1]
DELAY = float(sys.argv[2])
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-authorization", "proxy-authenticate", "host"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        headers = getattr(self, "headers", None)
        agent = headers.get("User-Agent", "-") if headers is not None else "-"
        sys.stderr.write("%s %s\n" % (agent, fmt % args))

    def forward(self):
        agent = self.headers.get("User-Agent", "")
        skopeo = agent.startswith("skopeo/") or agent.startswith("containers/")
        if "/blobs/" in self.path and skopeo and self.command == "GET":
            time.sleep(DELAY)
        length = int(self.headers.get("Content-Length", "0") or "0")
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection(UPSTREAM, timeout=120)
        # Every header as sent, repeated ones (Accept) included.
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", UPSTREAM)
        for k, v in self.headers.items():
            if k.lower() not in HOP:
                conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = forward
    do_HEAD = forward


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
