#!/usr/bin/env python3
"""Runs an example in loopback for the test suite and checks its output.

  run_example.py [--clients N] [--expect-server TEXT]... [--expect-client TEXT]...
                 PROGRAM [ARGS...]
  run_example.py --single [--expect TEXT]... PROGRAM [ARGS...]

Client/server mode starts `PROGRAM ARGS -p 0` as the server, reads the port
from its "listening on port N" line, then starts N clients
`PROGRAM ARGS -p PORT 127.0.0.1` at once. Every process must exit 0 within
the timeout and every expected text must appear in its output.
"""
import argparse
import re
import subprocess
import sys
import time

TIMEOUT = 60


def fail(message, outputs=()):
    for name, text in outputs:
        sys.stderr.write('--- %s ---\n%s\n' % (name, text))
    sys.exit('FAIL: ' + message)


def finish(proc, deadline):
    try:
        out, _ = proc.communicate(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return None, out
    return proc.returncode, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--single', action='store_true')
    ap.add_argument('--clients', type=int, default=1)
    ap.add_argument('--expect', action='append', default=[])
    ap.add_argument('--expect-server', action='append', default=[])
    ap.add_argument('--expect-client', action='append', default=[])
    ap.add_argument('command', nargs=argparse.REMAINDER)
    args = ap.parse_args()
    deadline = time.monotonic() + TIMEOUT
    run = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    if args.single:
        rc, out = finish(subprocess.Popen(args.command, **run), deadline)
        checks = [('program', rc, out, args.expect)]
    else:
        server = subprocess.Popen(args.command + ['-p', '0'], **run)
        head = server.stdout.readline()  # bounded: the server prints it first
        match = re.search(r'listening on port (\d+)', head)
        if not match:
            server.kill()
            fail('the server did not report its port', [('server', head + server.stdout.read())])
        port = match.group(1)
        clients = [subprocess.Popen(args.command + ['-p', port, '127.0.0.1'], **run)
                   for _ in range(args.clients)]
        checks = []
        for i, client in enumerate(clients):
            rc, out = finish(client, deadline)
            checks.append(('client %d' % i, rc, out, args.expect_client))
        rc, out = finish(server, deadline)
        checks.append(('server', rc, head + out, args.expect_server))

    outputs = [(name, out) for name, _, out, _ in checks]
    for name, rc, out, expected in checks:
        if rc is None:
            fail('%s did not finish within %d s' % (name, TIMEOUT), outputs)
        if rc != 0:
            fail('%s exited with %d' % (name, rc), outputs)
        for text in expected:
            if text not in out:
                fail('%s did not print "%s"' % (name, text), outputs)
    for name, out in outputs:
        sys.stdout.write('--- %s ---\n%s\n' % (name, out))
    print('PASS')


if __name__ == '__main__':
    main()
