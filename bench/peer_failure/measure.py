#!/usr/bin/env python3
"""Peer-failure detection times, per transport and case, on one or more libraries.

  bench/peer_failure/measure.py [--build DIR] [--lib NAME=LD_LIBRARY_PATH ...]
                                [--runs N] [--timeout SEC] [--only SUBSTRING ...]

Runs ucp_peer_failure (built in DIR/bench) for each case below, RUNS times,
on each library: "ucx-ng" (the build's own libraries) unless --lib names
others, e.g. --lib before=/tmp/base/build/ucp:/tmp/base/build/uct:...
--lib ucx-1.13=/usr/lib/x86_64-linux-gnu. Prints a markdown table: per case
and library the median [min-max] time from kill() to the error callback
(PEER mode) or to the outstanding sync send's failure (NONE mode), in ms;
"-" where nothing happened within the timeout, and the probe's error where
the case could not run.
"""
import argparse
import os
import statistics
import subprocess
import sys

# (name, probe arguments)
CASES = [
    ("shm posix+cma, eager, sender killed", ["-t", "posix,cma,self", "-w", "eager"]),
    ("shm posix+cma, eager, receiver killed",
     ["-t", "posix,cma,self", "-w", "eager", "-k", "receiver"]),
    ("shm posix+cma, rndv 64 MiB, sender killed", ["-t", "posix,cma,self", "-w", "rndv"]),
    ("shm posix+cma, rndv 64 MiB, receiver killed",
     ["-t", "posix,cma,self", "-w", "rndv", "-k", "receiver"]),
    ("shm sysv+cma, eager, sender killed", ["-t", "sysv,cma,self", "-w", "eager"]),
    ("shm posix only, rndv 64 MiB, sender killed", ["-t", "posix,self", "-w", "rndv"]),
    ("shm posix+cma, idle peer", ["-t", "posix,cma,self", "-w", "idle"]),
    ("tcp, eager, sender killed", ["-t", "tcp", "-w", "eager"]),
    ("tcp, rndv 64 MiB, receiver killed", ["-t", "tcp", "-w", "rndv", "-k", "receiver"]),
    ("tcp, idle peer", ["-t", "tcp", "-w", "idle"]),
    ("all transports (UCX_TLS unset), eager, sender killed", ["-w", "eager"]),
    ("client-server, shm+tcp, eager, client killed",
     ["-c", "-t", "posix,cma,self,tcp", "-w", "eager"]),
    ("client-server, tcp, eager, client killed", ["-c", "-t", "tcp", "-w", "eager"]),
    ("NONE mode: shm posix+cma, eager, sender killed",
     ["-m", "none", "-t", "posix,cma,self", "-w", "eager"]),
    ("NONE mode: tcp, eager, sender killed", ["-m", "none", "-t", "tcp", "-w", "eager"]),
]


def run_case(probe, args, env, runs, timeout):
    """Times per run (ms, None if not detected), or an error string."""
    cmd = [probe, "--csv", "-n", str(runs), "-T", str(timeout)] + args
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             timeout=runs * (4 * timeout + 20))
    except subprocess.TimeoutExpired:
        return "hung"
    times = []
    none_mode = "-m" in args and args[args.index("-m") + 1] == "none"
    for line in out.stdout.splitlines():
        fields = line.split(",")
        if len(fields) != 7 or fields[0] == "run":
            continue
        value = fields[2] if none_mode else fields[1]
        times.append(None if value == "none" else float(value))
    if not times:
        err = [l for l in out.stderr.splitlines() if l.strip()]
        reason = err[-1] if err else "exit %d" % out.returncode
        if "no peer failure handler" in out.stdout + out.stderr:
            reason = "unsupported: no peer failure handler on shm"
        return reason[:90]
    return times


def cell(result):
    if isinstance(result, str):
        return result
    got = [t for t in result if t is not None]
    if not got:
        return "- (%d runs)" % len(result)
    text = "%.0f [%.0f-%.0f]" % (statistics.median(got), min(got), max(got))
    if len(got) < len(result):
        text += " (%d of %d)" % (len(got), len(result))
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--lib", action="append", default=[])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--only", action="append", default=[])
    opts = parser.parse_args()

    probe = os.path.join(opts.build, "bench", "ucp_peer_failure")
    if not os.access(probe, os.X_OK):
        sys.exit("no %s: build first" % probe)
    libs = [("ucx-ng", None)]
    if opts.lib:
        libs = [tuple(spec.split("=", 1)) for spec in opts.lib]
    cases = [c for c in CASES if not opts.only or any(o in c[0] for o in opts.only)]

    print("| case (ms from kill() to the error callback; NONE mode: to the "
          "sync send's failure) | " + " | ".join(name for name, _ in libs) + " |")
    print("| --- |" + " --- |" * len(libs))
    for name, args in cases:
        row = []
        for _, path in libs:
            env = dict(os.environ)
            env["UCX_WARN_UNUSED_ENV_VARS"] = "n"
            env.pop("UCX_TLS", None)
            if path:
                env["LD_LIBRARY_PATH"] = path
            row.append(cell(run_case(probe, args, env, opts.runs, opts.timeout)))
        print("| %s | %s |" % (name, " | ".join(row)), flush=True)


if __name__ == "__main__":
    main()
