#!/usr/bin/env python3
"""Signalled puts: ucp_pwc_put against put + fence + AM, ucx-ng and UCX 1.13.

  bench/pwc/compare.py [--build DIR] [--rounds N] [--iters N] [--tls posix,cma,self,tcp,self]

For each transport, round after round (every variant once per round, so
drift hits all alike), runs ucp_pwc_lat:
  latency (8 B, 4 KiB, 1 MiB, one-way, the target probing or waiting):
    UCX 1.13  pattern: ucp_put_nbx + ucp_worker_fence + AM with the id;
    ucx-ng    pattern, the same calls;
    ucx-ng    pwc: ucp_pwc_put with a remote id;
  bandwidth (1 MiB):
    ucx-ng    bw-put: ucp_put_nbx, then a flush;
    ucx-ng    bw-pwc: ucp_pwc_put with both ids, every completion in;
and prints the medians with issue 19's ratios: pwc / UCX 1.13's pattern
(goal <= 0.7 at 8 B), and pwc bandwidth / bare put bandwidth (goal >= 1/1.05).
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
    proc = subprocess.run([tool] + args, capture_output=True, text=True, env=env, timeout=600)
    for line in proc.stdout.splitlines():
        parts = line.split()
        if proc.returncode == 0 and len(parts) == 4 and parts[2] in ("one_way_us", "MBps"):
            return float(parts[3])
    sys.exit("failed: %s %s\n%s%s" % (tool, " ".join(args), proc.stdout, proc.stderr[-2000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--tls", default="posix,cma,self;tcp,self",
                    help="transport lists separated by ';'")
    args = ap.parse_args()
    tool = os.path.join(args.build, "bench", "ucp_pwc_lat")
    ours = ":".join(os.path.join(args.build, d) for d in ("ucp", "ucs", "uct", "ucm"))
    print("| transport | size | UCX 1.13 put+fence+AM | ucx-ng put+fence+AM | ucx-ng pwc "
          "| pwc / UCX 1.13 | pwc / ucx-ng pattern |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    bw_rows = []
    for tls in args.tls.split(";"):
        lat_sizes = [8, 4096, 1 << 20]
        variants = []
        for size in lat_sizes:
            iters = args.iters if size <= 4096 else max(args.iters // 50, 50)
            if tls.startswith("tcp"):
                iters = max(iters // 10, 50)
            common = ["-x", tls, "-s", str(size), "-n", str(iters)]
            variants += [(("lat", size, "ucx"), ["-m", "pattern"] + common, UCX_LIBDIR),
                         (("lat", size, "pattern"), ["-m", "pattern"] + common, ours),
                         (("lat", size, "pwc"), ["-m", "pwc"] + common, ours)]
        bw_common = ["-x", tls, "-s", str(1 << 20), "-n", "200" if not tls.startswith("tcp")
                     else "50"]
        variants += [(("bw", 1 << 20, "put"), ["-m", "bw-put"] + bw_common, ours),
                     (("bw", 1 << 20, "pwc"), ["-m", "bw-pwc"] + bw_common, ours)]
        samples = {key: [] for key, _, _ in variants}
        for _ in range(args.rounds):
            for key, extra, libdir in variants:
                samples[key].append(run(tool, extra, libdir))
        med = {key: statistics.median(values) for key, values in samples.items()}
        for size in lat_sizes:
            ucx, pattern, pwc = (med[("lat", size, k)] for k in ("ucx", "pattern", "pwc"))
            print("| %s | %d | %.3f | %.3f | %.3f | %.2f | %.2f |" %
                  (tls, size, ucx, pattern, pwc, pwc / ucx, pwc / pattern))
        put, pwc = med[("bw", 1 << 20, "put")], med[("bw", 1 << 20, "pwc")]
        bw_rows.append("| %s | %.0f | %.0f | %.3f |" % (tls, put, pwc, pwc / put))
    print()
    print("| transport | 1 MiB puts, MB/s | 1 MiB pwc, MB/s | pwc / put |")
    print("| --- | ---: | ---: | ---: |")
    for row in bw_rows:
        print(row)
    print("\nmedians of %d rounds; latency one-way in microseconds" % args.rounds)


if __name__ == "__main__":
    main()
