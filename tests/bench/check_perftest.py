#!/usr/bin/env python3
"""Runs ucx_perftest and checks its machine-readable output.

usage: check_perftest.py MODE TOOL [TOOL ARGS...] [-- CHECKS...]

MODE is how the tool is run and read back:
  csv      TOOL ARGS --csv           one CSV header, a line per test
  json     TOOL ARGS --json          one JSON document
  table    TOOL ARGS -f              UCX's table: the numbers line of each test
  ucxcsv   TOOL ARGS -v -f           UCX's CSV line after its header
  client   a server (TOOL -p PORT) and a client (TOOL localhost -p PORT ARGS --csv)
  mpirun   two ranks of Open MPI's mpirun (TOOL ARGS --csv): the addresses go
           through MPI, and one rank reports

CHECKS (after --):
  --rows N        that many results (default: 1)
  --status S      every result has this status (default: ok)
  --tests A,B,..  the results' tests, in order (a batch file's)
  --sizes A,B,..  the results' message sizes, in order (a batch file's)
  --threads N     -T N: N times the iterations, and the rate is N / latency
                  (latency is one thread's operation, the rate all of them)

Every "ok" result must carry the iteration count and message size asked
for, and numbers that agree with each other: positive latencies, message
rate = 1 / overall latency, bandwidth = size x message rate.
"""
import csv
import io
import json
import math
import os
import socket
import subprocess
import sys

TIMEOUT = 240


def fail(message, output=""):
    print("FAIL: " + message)
    if output:
        print("---- output ----")
        print(output)
    sys.exit(1)


def arg_value(args, flag, default):
    if flag in args:
        return args[args.index(flag) + 1]
    return default


def run(cmd, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, **kwargs)
    return proc.returncode, proc.stdout, proc.stderr


def close(a, b, rel=0.02):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def check_numbers(r, iters, size, output, threads=1):
    name = "%s/%s" % (r["test"], r["size"])
    if int(r["iterations"]) != iters:
        fail("%s: %s iterations, asked for %d" % (name, r["iterations"], iters), output)
    if size is not None and int(r["size"]) != size:
        fail("%s: size %s, asked for %d" % (name, r["size"], size), output)
    lat_pct = float(r["latency_percentile_us"])
    lat = float(r["latency_overall_us"])
    rate = float(r["msgrate_overall"])
    bw = float(r["bandwidth_overall_mbs"])
    # Bandwidth may print as 0.00 for tiny messages on a slow run.
    if not (lat_pct > 0 and lat > 0 and rate > 0 and bw >= 0):
        fail("%s: non-positive numbers %r" % (name, r), output)
    # Latencies are printed to 0.001 usec: allow for that rounding on tiny
    # latencies (0.015 usec is only known to within 3%).
    want_rate = threads * 1e6 / lat
    if not close(rate, want_rate, max(0.02, 0.001 / lat)) and abs(rate - want_rate) > 1:
        fail("%s: message rate %g is not %d/latency (%g us)" % (name, rate, threads, lat),
             output)
    expected_bw = int(r["size"]) * rate / (1 << 20)
    if not close(bw, expected_bw, 0.02) and abs(bw - expected_bw) > 0.01:
        fail("%s: bandwidth %g MB/s is not size x rate (%g)" % (name, bw, expected_bw),
             output)


def parse_csv(text, output):
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        fail("no CSV rows", output)
    return rows


def parse_json(text, output):
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail("not JSON: %s" % e, output)
    if doc.get("tool") != "ucx_perftest" or not isinstance(doc.get("results"), list):
        fail("JSON without tool/results", output)
    return doc["results"]


def table_rows(text, iters, size, output, ucx_csv):
    """UCX's formats carry no names: rebuild rows from the numbers."""
    rows = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if ucx_csv:
            if not line.startswith("iterations,"):
                continue
            values = lines[i + 1].split(",")
        else:
            fields = line.split()
            if len(fields) != 8 or not all(f.replace(".", "", 1).isdigit()
                                           for f in fields):
                continue
            values = fields
        if len(values) != 8:
            fail("a results line without 8 numbers: %r" % values, output)
        keys = ["iterations", "latency_percentile_us", "latency_average_us",
                "latency_overall_us", "bandwidth_average_mbs", "bandwidth_overall_mbs",
                "msgrate_average", "msgrate_overall"]
        row = dict(zip(keys, values))
        row.update(test="?", size=str(size), status="ok")
        rows.append(row)
    if not rows:
        fail("no results line", output)
    return rows


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    mode, tool = argv[0], argv[1]
    rest = argv[2:]
    checks = []
    if "--" in rest:
        checks = rest[rest.index("--") + 1:]
        rest = rest[:rest.index("--")]
    expect_rows = int(arg_value(checks, "--rows", "1"))
    expect_status = arg_value(checks, "--status", "ok")
    threads = int(arg_value(checks, "--threads", "1"))

    iters = int(arg_value(rest, "-n", "1000000"))
    sizes = arg_value(rest, "-s", "8")
    size = None if ("--sweep" in rest or "-b" in rest) else sum(int(s) for s in
                                                                 sizes.split(","))

    if mode == "client":
        port = str(free_port())
        server = subprocess.Popen([tool, "-p", port], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            code, out, err = run([tool, "localhost", "-p", port] + rest + ["--csv"])
            server_out, _ = server.communicate(timeout=TIMEOUT)
        finally:
            if server.poll() is None:
                server.kill()
        output = out + err + "---- server ----\n" + server_out
        if server.returncode != 0:
            fail("the server exited with %d" % server.returncode, output)
        if "Accepted connection" not in server_out:
            fail("the server did not report the connection", output)
        rows = parse_csv(out, output)
    elif mode == "mpirun":
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        code, out, err = run(["mpirun.openmpi", "-np", "2", "--mca", "btl", "self,vader",
                              tool] + rest + ["--csv"], env=env)
        output = out + err
        rows = parse_csv(out, output)
    else:
        extra = {"csv": ["--csv"], "json": ["--json"], "table": ["-f"],
                 "ucxcsv": ["-v", "-f"]}.get(mode)
        if extra is None:
            fail("unknown mode " + mode)
        code, out, err = run([tool] + rest + extra)
        output = out + err
        if mode == "csv":
            rows = parse_csv(out, output)
        elif mode == "json":
            rows = parse_json(out, output)
        else:
            rows = table_rows(out, iters, size, output, mode == "ucxcsv")

    expected_code = 0 if expect_status in ("ok", "skipped") else 1
    if expect_status == "skipped" and "--sweep" not in rest:
        expected_code = 1
    if code != expected_code:
        fail("exit code %d, expected %d" % (code, expected_code), output)
    if len(rows) != expect_rows:
        fail("%d results, expected %d" % (len(rows), expect_rows), output)
    for r in rows:
        if r["status"] != expect_status:
            fail("status %r (%s), expected %r" % (r["status"], r.get("error", ""),
                                                   expect_status), output)
        if expect_status == "ok":
            want_iters = iters * threads if "--sweep" not in rest else int(r["iterations"])
            check_numbers(r, want_iters, size, output, threads)
    for key, field in (("--tests", "test"), ("--sizes", "size")):
        wanted = arg_value(checks, key, None)
        if wanted is not None and [str(r[field]) for r in rows] != wanted.split(","):
            fail("%s %r, expected %s" % (field, [r[field] for r in rows], wanted), output)
    test = arg_value(rest, "-t", None)
    if test and mode in ("csv", "json", "client", "mpirun") and "-D" not in rest:
        for r in rows:
            if r["test"] != test:
                fail("test %r, expected %r" % (r["test"], test), output)
    print("ok: %d result(s)" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
