#!/usr/bin/env python3
"""A registry token service for the image tests (the distribution registry's `auth: token`):
GET /token?service=S&scope=repository:NAME:ACTIONS with Basic USER:PASSWORD answers
{"token": JWT}, an RS256 JWT whose x5c header carries CERT (signed with KEY by openssl), granting
the scope's actions. Wrong or missing credentials: 401. Prints its port on the first line.

usage: token_server.py KEY CERT ISSUER SERVICE USER PASSWORD
"""
import base64
import http.server
import json
import ssl
import subprocess
import sys
import time
import urllib.parse

KEY, CERT, ISSUER, SERVICE, USER, PASSWORD = sys.argv[1:7]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def cert_der():
    with open(CERT) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def sign(payload):
    header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(cert_der()).decode()]}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode())
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", KEY], input=signing_input.encode(),
                         capture_output=True, check=True).stdout
    return signing_input + "." + b64url(sig)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        want = "Basic " + base64.b64encode((USER + ":" + PASSWORD).encode()).decode()
        if self.headers.get("Authorization") != want:
            body = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())
            return
        access = []
        for scope in query.get("scope", []):
            for one in scope.split(" "):
                kind, name, actions = one.split(":")
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        token = sign({"iss": ISSUER, "sub": USER, "aud": query.get("service", [SERVICE])[0],
                      "exp": now + 600, "nbf": now - 10, "iat": now, "jti": str(now),
                      "access": access})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"token": token, "expires_in": 600}).encode())


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
