#!/usr/bin/env python3
"""Wake-up latency: ucp_worker_wait against wait sets, ucx-ng and UCX 1.13.

  bench/wakeup/compare.py [--build DIR] [--rounds N] [--iters N] [--workers 1,8,64]

For shared memory (posix,self) and tcp (tcp,self), round after round, runs
ucp_wakeup_lat (a receiver that sleeps between messages answers one
8-byte message at a time) as:
  UCX 1.13, ucp_worker_wait on one worker (Debian's library);
  ucx-ng,   ucp_worker_wait on one worker;
  ucx-ng,   a wait set over 1, 8 and 64 workers (message to the first);
and prints the medians of the one-way times and each one's ratio to UCX
1.13's ucp_worker_wait (issue 18's goal: a wait set over 8 workers within
1.1x of it).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UCX_LIBDIR = "/usr/lib/x86_64-linux-gnu"


def run(tool, args, libdir):
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    env.pop("UCX_CONFIG_FILE", None)
    proc = subprocess.run([tool] + args, capture_output=True, text=True, env=env, timeout=300)
    for line in proc.stdout.splitlines():
        parts = line.split()
        if proc.returncode == 0 and len(parts) == 6 and parts[4] == "one_way_us":
            return float(parts[5])
    sys.exit("failed: %s %s\n%s%s" % (tool, " ".join(args), proc.stdout, proc.stderr[-2000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--workers", default="1,8,64")
    args = ap.parse_args()
    tool = os.path.join(args.build, "bench", "ucp_wakeup_lat")
    ours = ":".join(os.path.join(args.build, d) for d in ("ucp", "ucs", "uct", "ucm"))
    counts = [int(x) for x in args.workers.split(",")]
    print("| transport | receiver sleeps in | one-way us | / UCX 1.13 worker_wait |")
    print("| --- | --- | ---: | ---: |")
    for tls in ("posix,self", "tcp,self"):
        common = ["-x", tls, "-n", str(args.iters)]
        variants = [("UCX 1.13: ucp_worker_wait, 1 worker", ["-m", "worker_wait"], UCX_LIBDIR),
                    ("ucx-ng: ucp_worker_wait, 1 worker", ["-m", "worker_wait"], ours)]
        variants += [("ucx-ng: wait set over %d workers" % n, ["-m", "waitset", "-W", str(n)],
                      ours) for n in counts]
        samples = [[] for _ in variants]
        for _ in range(args.rounds):
            for i, (_, extra, libdir) in enumerate(variants):
                samples[i].append(run(tool, extra + common, libdir))
        medians = [statistics.median(s) for s in samples]
        for (name, _, _), m in zip(variants, medians):
            print("| %s | %s | %.2f | %.2f |" % (tls.split(",")[0], name, m, m / medians[0]))


if __name__ == "__main__":
    main()
