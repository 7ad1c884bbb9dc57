# What a hostile step tries against the control plane and another namespace (run by
# /usr/bin/python3 as a step of namespace team-b; tests/security/isolation_test.cc). Each
# attempt prints "<name>: DENIED" or "<name>: ALLOWED <what it got>"; it never fails itself.
import glob
import os
import socket
import sqlite3
import sys

state = os.environ["ATTACK_STATE_DIR"]
runs = os.environ["ATTACK_RUNS_DIR"]
victim = os.environ.get("ATTACK_VICTIM_STAGING", "")
# Only a prefix: the secret itself must come from somewhere the step should not reach.
secret = os.environ["ATTACK_SECRET_PREFIX"]


def attempt(name, fn):
    try:
        got = fn()
        print(f"{name}: ALLOWED {str(got)[:200]!r}", flush=True)
    except Exception as e:  # noqa: BLE001 - every refusal is the expected outcome
        print(f"{name}: DENIED ({type(e).__name__})", flush=True)


def forge_token():
    db = sqlite3.connect(f"file:{state}/rsl.db?mode=rw", uri=True, timeout=1)
    db.execute("INSERT INTO api_tokens(hash, subject, role, namespaces, created_ms) "
               "VALUES ('x', 'mallory', 'admin', '*', 0)")
    db.commit()
    return "inserted"


def read_file(path):
    with open(path, "rb") as f:
        return f.read(64)


def grep_secret(path):
    with open(path, "rb") as f:
        data = f.read()
        at = data.find(secret.encode())
        if at >= 0:
            return "found " + data[at:at + 40].decode(errors="replace")
    return "read, no secret"


def environ_of_others():
    found = []
    me = str(os.getpid())
    for p in glob.glob("/proc/[0-9]*/environ"):
        if p.split("/")[2] == me:
            continue
        try:
            with open(p, "rb") as f:
                data = f.read()
            at = data.find(secret.encode())
            if at >= 0:
                found.append(p + " " + data[at:at + 40].decode(errors="replace"))
        except OSError:
            pass
    if found:
        return found
    raise PermissionError("no environ with the secret was readable")


def supervisor_socket():
    # Abstract unix sockets named rsl-*: the local supervisor's. Connect and ask it to run a
    # command as the supervisor's own user.
    names = []
    with open("/proc/net/unix") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if len(parts) >= 8 and parts[7].startswith("@rsl"):
                names.append(parts[7][1:])
    if not names:
        raise FileNotFoundError("no supervisor socket")
    evidence = os.path.join(os.environ["RSL_OUTPUT"], "injected")
    for name in set(names):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect("\0" + name)
            hello = s.recv(4096)
            if not hello:
                continue
            s.sendall(('{"op":"launch","id":"evil","argv":["/bin/sh","-c","id > ' + evidence +
                       '"],"env":[],"workdir":"/","log":"/tmp/evil.log","exit_file":"/tmp/evil.exit"}\n').encode())
            return "launch sent to " + name
        except OSError:
            pass
        finally:
            s.close()
    raise PermissionError("every supervisor socket refused")


def write_into(path):
    with open(os.path.join(path, "planted"), "w") as f:
        f.write("x")
    return "written"


attempt("forge-token", forge_token)
attempt("read-db", lambda: read_file(f"{state}/rsl.db"))
attempt("grep-db", lambda: grep_secret(f"{state}/rsl.db"))
attempt("grep-wal", lambda: grep_secret(f"{state}/rsl.db-wal"))
attempt("list-state", lambda: os.listdir(state))
attempt("list-runs", lambda: os.listdir(runs))
if victim:
    attempt("list-victim-staging", lambda: os.listdir(victim))
    attempt("read-victim-output", lambda: read_file(os.path.join(victim, "private.txt")))
    attempt("write-victim-staging", lambda: write_into(victim))
    attempt("list-victim-run", lambda: os.listdir(os.path.dirname(os.path.dirname(victim))))
    attempt("read-victim-logs", lambda: os.listdir(os.path.join(os.path.dirname(os.path.dirname(victim)), "attempts")))
attempt("environ-of-others", environ_of_others)
attempt("supervisor-socket", supervisor_socket)
# What the step must still be able to do.
attempt("own-output", lambda: write_into(os.environ["RSL_OUTPUT"]))
attempt("own-workdir", lambda: write_into(os.getcwd()))
with open(os.environ["RSL_METRICS_FILE"], "w") as f:
    f.write('{"attacks": 1}')
print("uid", os.getuid(), "gid", os.getgid(), "groups", os.getgroups(), flush=True)
sys.exit(0)
