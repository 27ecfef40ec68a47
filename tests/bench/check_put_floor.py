#!/usr/bin/env python3
"""Runs ucp_put_floor and checks what it prints.

usage: check_put_floor.py csv TOOL [ARGS...]     the CSV line and its columns
       check_put_floor.py table TOOL [ARGS...]   the human-readable table
       check_put_floor.py no-mapping TOOL [ARGS...]
                                 UCX_TLS without shared memory: exit 1, saying why

A run must carry the size and counts asked for, a positive latency for
every kind of block it ran, and a library share that agrees with them.
"""
import csv
import io
import os
import subprocess
import sys

TIMEOUT = 120


def fail(message, output=""):
    print("FAIL: " + message)
    if output:
        print("---- output ----\n" + output)
    sys.exit(1)


def value_of(args, flag, default):
    return int(args[args.index(flag) + 1]) if flag in args else default


def run(cmd, env):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        fail("timed out: " + " ".join(cmd))
    return proc.returncode, proc.stdout, proc.stderr


def check_csv(tool, args, env):
    code, out, err = run([tool] + args + ["--csv"], env)
    if code != 0:
        fail("exit %d" % code, out + err)
    rows = list(csv.DictReader(io.StringIO(out)))
    if len(rows) != 1:
        fail("expected one CSV row, got %d" % len(rows), out)
    row = rows[0]
    kinds = ["raw_usec", "put_usec"]
    if "--split" in args:
        kinds += ["put_only_usec", "progress_only_usec"]
    expected = ["size", "round_trips_per_block", "blocks"] + kinds + ["library_share_pct"]
    if list(row.keys()) != expected:
        fail("columns %s, expected %s" % (list(row.keys()), expected), out)
    if int(row["size"]) != value_of(args, "-s", 8):
        fail("size %s" % row["size"], out)
    if int(row["round_trips_per_block"]) != value_of(args, "-n", 20000):
        fail("round trips %s" % row["round_trips_per_block"], out)
    if int(row["blocks"]) != value_of(args, "-b", 40):
        fail("blocks %s" % row["blocks"], out)
    usec = {k: float(row[k]) for k in kinds}
    for kind, value in usec.items():
        if not 0 < value < 1000:
            fail("%s = %s is not a latency" % (kind, value), out)
    put, raw = usec["put_usec"], usec["raw_usec"]
    share = (put - raw) / put * 100
    # The tool prints latencies to 4 decimals and the share to 1, each from
    # unrounded values: allow the share's own rounding plus how far the
    # latencies' rounding (0.00005 us each) can move (put - raw) / put.
    slack = 0.05 + 100 * 0.00005 * (1 / put + raw / (put * put)) + 1e-6
    if abs(share - float(row["library_share_pct"])) > slack:
        fail("library share %s, the latencies give %.2f" % (row["library_share_pct"], share),
             out)
    print("ok: " + ", ".join("%s %.4f" % kv for kv in usec.items()))


def check_table(tool, args, env):
    code, out, err = run([tool] + args, env)
    if code != 0:
        fail("exit %d" % code, out + err)
    for needle in ("raw stores (ucp_rkey_ptr), bare spin",
                   "ucp_put_nbx, ucp_worker_progress in the spin",
                   "library share of the put ping-pong", "# library: "):
        if needle not in out:
            fail("no '%s' in the table" % needle, out)
    print("ok")


def check_no_mapping(tool, args, env):
    env = dict(env, UCX_TLS="tcp")
    code, out, err = run([tool] + args, env)
    if code != 1:
        fail("exit %d, expected 1" % code, out + err)
    if "ucp_rkey_ptr" not in err or "posix or sysv" not in err:
        fail("the error does not say why", out + err)
    print("ok")


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    mode, tool, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = dict(os.environ)
    checks = {"csv": check_csv, "table": check_table, "no-mapping": check_no_mapping}
    if mode not in checks:
        fail("unknown mode " + mode)
    checks[mode](tool, args, env)


if __name__ == "__main__":
    main()
