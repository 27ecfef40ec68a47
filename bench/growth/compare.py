#!/usr/bin/env python3
"""How a worker's costs grow with its endpoints: ucx-ng against UCX 1.13.

  bench/growth/compare.py [--build DIR] [--rounds N] [--eps 1,64,1024,4096]
                          [--iters N] [--out DIR]

For shared memory (posix,self) and tcp (tcp,self), round after round, runs
ucp_ep_growth (bench/growth/ep_growth.cc) on Debian's UCX 1.13 and on
ucx-ng, and prints, per endpoint count, the medians over the rounds of:
the time to create and connect an endpoint, the resident memory an
endpoint costs on the side that creates it and on its peer, the file
descriptors each holds, and the one-way latency of an 8-byte tag ping-pong
with that many endpoints connected (and its ratio to one endpoint: issue
23's goal is <= 1.1 at 4096), then the descriptors left once all but one
endpoint were closed. Then ucp_tag_match_growth (bench/growth/tag_match.cc)
on both libraries: nanoseconds per tag match with 1, 100 and 10000 other
receives posted or messages unmatched, exact and wildcard. Then MPI_Init
and MPI_Finalize of 2 and 4 ranks (mpi_init_time, every pair connected in
between) under Open MPI and MPICH on both libraries, with the launcher's
whole run. Then 1, 2 and 4 pairs of processes (2, 4, 8 processes) running
ucx_perftest --loopback at once, over shared memory and tcp: the median of
the pairs' 8-byte tag latency and the sum of their 1 MiB tag bandwidth (on
2 cores, 4 and 8 processes are oversubscribed: the numbers are reported,
nothing is tuned to them). --out DIR also writes the curves (.dat) and plots.
"""
import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import gnuplot  # noqa: E402
import mpi_launch  # noqa: E402

UCX_LIBDIR = "/usr/lib/x86_64-linux-gnu"
COLUMNS = ["eps", "connect_us", "kb_per_ep", "kb_per_ep_pr", "fds", "fds_peer",
           "one_way_us", "vs_1ep"]


def run(tool, args, libdir):
    """{eps: {column: value}} and the descriptors left after closing."""
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    env.pop("UCX_CONFIG_FILE", None)
    proc = subprocess.run([tool] + args, capture_output=True, text=True, env=env, timeout=900)
    rows, after = {}, None
    for line in proc.stdout.splitlines():
        parts = line.split()
        if line.startswith("after closing"):
            after = (int(parts[-3].rstrip(",")), int(parts[-1]))
        elif len(parts) == len(COLUMNS) and parts[0].isdigit():
            rows[int(parts[0])] = dict(zip(COLUMNS, map(float, parts)))
    if proc.returncode != 0 or not rows or after is None:
        sys.exit("failed: %s %s\n%s%s" % (tool, " ".join(args), proc.stdout,
                                           proc.stderr[-2000:]))
    return rows, after


def tag_match_table(build, libraries, rounds):
    """Medians of ucp_tag_match_growth's ns per match, per library and N."""
    tool = os.path.join(build, "bench", "ucp_tag_match_growth")
    samples = {lib: [] for lib, _ in libraries}
    columns = None
    for _ in range(rounds):
        for lib, libdir in libraries:
            env = dict(os.environ, LD_LIBRARY_PATH=libdir)
            env.pop("UCX_CONFIG_FILE", None)
            proc = subprocess.run([tool], capture_output=True, text=True, env=env,
                                  timeout=900)
            lines = [l.split() for l in proc.stdout.splitlines() if not l.startswith("#")]
            if proc.returncode != 0 or len(lines) < 2:
                sys.exit("failed: %s\n%s%s" % (tool, proc.stdout, proc.stderr[-2000:]))
            columns = lines[0][1:]
            samples[lib].append({int(l[0]): [float(v) for v in l[1:]] for l in lines[1:]})
    print("\nTag matching: ns per 8-byte message and its receive (UCX_TLS=self), with N "
          "other receives posted or N other messages unmatched")
    print("| library | N | " + " | ".join(columns) + " |")
    print("| --- | ---: |" + " ---: |" * len(columns))
    for lib, _ in libraries:
        for n in sorted(samples[lib][0]):
            values = [statistics.median(r[n][i] for r in samples[lib])
                      for i in range(len(columns))]
            print("| %s | %d | %s |" % (lib, n, " | ".join("%.1f" % v for v in values)))


def mpi_init_table(build, libraries, rounds):
    """Medians of MPI_Init, MPI_Finalize and the launcher's wall time."""
    base = dict(os.environ)
    base.pop("LD_LIBRARY_PATH", None)
    rows = []
    for (runtime, launcher), binary in zip(mpi_launch.RUNTIMES,
                                           ("mpi_init_time", "mpi_init_time_mpich")):
        binary = os.path.join(build, "bench", binary)
        if not os.access(binary, os.X_OK) or shutil.which(launcher) is None:
            print("\nMPI_Init (%s): not built or no %s" % (runtime, launcher))
            continue
        for nprocs in (2, 4):
            for lib, libdir in libraries:
                libs = None if libdir == UCX_LIBDIR else libdir
                cmd, env = mpi_launch.command(runtime, launcher, nprocs, [binary], libs, base,
                                              oversubscribe=True)
                init, fin, wall = [], [], []
                for _ in range(rounds):
                    start = time.monotonic()
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                          timeout=300)
                    wall.append((time.monotonic() - start) * 1e3)
                    fields = proc.stdout.split()
                    if proc.returncode != 0 or "init_ms" not in fields:
                        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), proc.stdout,
                                                         proc.stderr[-2000:]))
                    init.append(float(fields[fields.index("init_ms") + 1]))
                    fin.append(float(fields[fields.index("finalize_ms") + 1]))
                rows.append((runtime, nprocs, lib, statistics.median(init),
                             statistics.median(fin), statistics.median(wall)))
    if rows:
        print("\nMPI_Init and MPI_Finalize (ms; every pair of ranks connected in between; "
              "4 ranks on 2 cores are oversubscribed)")
        print("| runtime | ranks | library | MPI_Init (slowest rank) | MPI_Finalize (rank 0) | "
              "launcher, whole run |")
        print("| --- | ---: | --- | ---: | ---: | ---: |")
        for r in rows:
            print("| %s | %d | %s | %.1f | %.1f | %.0f |" % r)


def concurrent_pairs(tool, env, test, size, iters, pairs):
    """Starts `pairs` ucx_perftest --loopback runs at once; their Final lines'
    numbers, or None if one failed or timed out."""
    procs = [subprocess.Popen([tool, "--loopback", "-t", test, "-s", str(size), "-n",
                               str(iters), "-w", str(max(10, iters // 10))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)
             for _ in range(pairs)]
    results = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            results.append(None)
            continue
        final = [l.split() for l in out.splitlines() if l.startswith("Final:")]
        results.append([float(v) for v in final[-1][1:]]
                       if proc.returncode == 0 and final else None)
    return None if None in results else results


def concurrent_table(build, libraries, rounds, lat_iters, bw_iters):
    """2, 4 and 8 processes (1, 2, 4 loopback pairs) sending at once."""
    tool = os.path.join(build, "bench", "perftest", "ucx_perftest")
    print("\nProcesses sending at once: pairs of ucx_perftest --loopback (our tool on both "
          "libraries); 8-byte tag_lat one-way us (median of the pairs' medians) and 1 MiB "
          "tag_bw MB/s (sum over the pairs); on 2 cores, 4 and 8 processes are "
          "oversubscribed")
    print("| transport | processes | library | 8 B latency us | 1 MiB bandwidth MB/s |")
    print("| --- | ---: | --- | ---: | ---: |")
    for tls in ("posix,self", "tcp,self"):
        for pairs in (1, 2, 4):
            for lib, libdir in libraries:
                env = dict(os.environ, LD_LIBRARY_PATH=libdir, UCX_TLS=tls)
                env.pop("UCX_CONFIG_FILE", None)
                lat, bw = [], []
                for _ in range(rounds):
                    r = concurrent_pairs(tool, env, "tag_lat", 8, lat_iters // pairs, pairs)
                    if r is not None:
                        lat.append(statistics.median(x[1] for x in r))
                    r = concurrent_pairs(tool, env, "tag_bw", 1 << 20, bw_iters // pairs, pairs)
                    if r is not None:
                        bw.append(sum(x[5] for x in r))
                print("| %s | %d | %s | %s | %s |" % (
                    tls.split(",")[0], 2 * pairs, lib,
                    "%.3f" % statistics.median(lat) if lat else "failed",
                    "%.0f" % statistics.median(bw) if bw else "failed"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--eps", default="1,64,1024,4096")
    ap.add_argument("--iters", type=int, default=10000)
    ap.add_argument("--out", help="write .dat files and plots here")
    args = ap.parse_args()
    tool = os.path.join(args.build, "bench", "ucp_ep_growth")
    ours = ":".join(os.path.join(args.build, d) for d in ("ucp", "ucs", "uct", "ucm"))
    counts = [int(x) for x in args.eps.split(",")]
    libraries = [("UCX 1.13", UCX_LIBDIR), ("ucx-ng", ours)]
    curves = {"one_way_us": [], "kb_per_ep": []}
    variants = []

    print("| transport | eps | library | connect us/ep | KB/ep | KB/ep at the peer | fds | "
          "fds at the peer | one-way us | / 1 ep |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    closing = []
    for tls in ("posix,self", "tcp,self"):
        name = tls.split(",")[0]
        samples = {lib: [] for lib, _ in libraries}
        for _ in range(args.rounds):
            for lib, libdir in libraries:
                samples[lib].append(run(tool, ["-x", tls, "-e", args.eps,
                                               "-n", str(args.iters)], libdir))
        for lib, _ in libraries:
            variants.append("%s %s" % (name, lib))
            medians = {}
            for n in counts:
                medians[n] = {c: statistics.median(r[n][c] for r, _ in samples[lib])
                              for c in COLUMNS}
            for n in counts:
                m = medians[n]
                print("| %s | %d | %s | %.1f | %.2f | %.2f | %d | %d | %.3f | %.3f |" %
                      (name, n, lib, m["connect_us"], m["kb_per_ep"], m["kb_per_ep_pr"],
                       m["fds"], m["fds_peer"], m["one_way_us"],
                       m["one_way_us"] / medians[counts[0]]["one_way_us"]))
            for key in curves:
                curves[key].append([medians[n][key] for n in counts])
            after = samples[lib][-1][1]
            closing.append("%s %s: %d here, %d at the peer" % (name, lib, after[0], after[1]))
    print("\nDescriptors left right after closing all but one endpoint (last round): " +
          "; ".join(closing))

    tag_match_table(args.build, libraries, args.rounds)
    mpi_init_table(args.build, libraries, args.rounds)
    concurrent_table(args.build, libraries, args.rounds, args.iters, 200)

    if args.out:
        stem = datetime.date.today().isoformat() + "-growth-"
        images = []
        for key, title, ylabel, scale in (
                ("one_way_us", "8-byte tag latency with N endpoints connected", "one-way us",
                 "x"),
                ("kb_per_ep", "resident memory per endpoint", "KB per endpoint", "x")):
            rows = [(n, [curve[i] if (key != "kb_per_ep" or n != counts[0]) else None
                         for curve in curves[key]])
                    for i, n in enumerate(counts)]
            images += gnuplot.plot(args.out, stem + key, title, "endpoints", ylabel,
                                   variants, rows, logscale=scale)
        if images:
            print("plots: " + ", ".join(images))


if __name__ == "__main__":
    main()
