#!/usr/bin/env python3
"""Collectives of libucp_coll against Open MPI's and MPICH's on the same machine.

  bench/coll/compare.py [--build DIR] [--rounds N] [--iters N] [--ranks 2,4] [--out DIR]

For each rank count, round after round (A B C D ...):
  A  ucp_coll_bench: libucp_coll on ucx-ng;
  B  mpi_coll_bench under Open MPI (pml ucx; its coll tuned) on ucx-ng;
  C  the same on Debian's UCX 1.13;
  D  mpi_coll_bench_mpich under MPICH (ch4:ucx; its own collectives) on ucx-ng,
     with no more ranks than cores (MPICH spins without yielding: oversubscribed
     it takes milliseconds per operation and minutes per table);
and prints the medians over the rounds (microseconds per operation) of
barrier, bcast, allreduce, allgather and alltoall at 8 B, 64 KiB and 1 MiB,
with the ratios A/B and A/C (below 1: ours is faster). With more ranks than
cores every variant yields the core when idle (ours -y, Open MPI under
--oversubscribe, MPICH's default); the numbers then measure the scheduler
as much as the libraries. --out DIR also writes, per rank count and
operation, the medians (<date>-coll-<N>ranks-<op>.dat) and a log-log plot of
them (.png, .svg) when gnuplot is there.
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import gnuplot  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 600


def parse(text):
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            try:
                values[(parts[0], int(parts[1]))] = float(parts[2])
            except ValueError:
                pass
    return values


def run(cmd, env):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    values = parse(proc.stdout)
    if proc.returncode != 0 or not values:
        return None, "exit %d: %s" % (proc.returncode, (proc.stdout + proc.stderr)[-300:])
    return values, None


def plot(out_dir, n, op, variants, rows):
    """rows: [(bytes, [median or None per variant])]; the image names made."""
    stem = "%s-coll-%dranks-%s" % (datetime.date.today().isoformat(), n, op)
    return gnuplot.plot(out_dir, stem, "%s on %d ranks: microseconds per operation" % (op, n),
                        "bytes per rank", "us (median)", variants, rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--out", help="write .dat files and plots here")
    args = ap.parse_args()
    bench = os.path.join(args.build, "bench")
    ours = os.path.join(bench, "ucp_coll_bench")
    ompi = os.path.join(bench, "mpi_coll_bench")
    mpich = os.path.join(bench, "mpi_coll_bench_mpich")
    libs = ":".join(os.path.join(args.build, d) for d in ("coll", "ucp", "ucs", "uct", "ucm"))
    if not os.access(ours, os.X_OK):
        sys.exit("%s is not built" % ours)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               UCX_WARN_UNUSED_ENV_VARS="n")
    env.pop("UCX_CONFIG_FILE", None)
    cores = os.cpu_count() or 1

    def ours_cmd(n):
        return [ours, "-n", str(n), "-i", str(args.iters)] + (["-y"] if n > cores else [])

    def ompi_cmd(n, libdir):
        cmd = ["mpirun.openmpi", "--oversubscribe", "-np", str(n), "--mca", "pml", "ucx",
               "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
               "--mca", "btl", "self"]
        if libdir:
            cmd += ["-x", "LD_LIBRARY_PATH=" + libdir]
        return cmd + [ompi, str(args.iters)]

    variants = [("ucp_coll (ucx-ng)", ours_cmd, dict(env, LD_LIBRARY_PATH=libs))]
    if os.access(ompi, os.X_OK):
        variants += [("Open MPI on ucx-ng", lambda n: ompi_cmd(n, libs), env),
                     ("Open MPI on UCX 1.13", lambda n: ompi_cmd(n, None), env)]
    if os.access(mpich, os.X_OK):
        variants += [("MPICH on ucx-ng",
                      lambda n: ["mpiexec.mpich", "-n", str(n), mpich, str(args.iters)],
                      dict(env, LD_LIBRARY_PATH=libs))]
    ratio_names = [v[0] for v in variants[1:3]]
    print("| ranks | operation | bytes | %s |%s" % (
        " | ".join(v[0] + " (us)" for v in variants),
        "".join(" ours / %s |" % r for r in ratio_names)))
    print("| --- | --- | ---: |%s%s" % (" ---: |" * len(variants), " ---: |" * len(ratio_names)))
    failures = []
    images = []
    for n in [int(x) for x in args.ranks.split(",")]:
        samples = [dict() for _ in variants]
        for _ in range(args.rounds):
            for i, (name, cmd, venv) in enumerate(variants):
                if name.startswith("MPICH") and n > cores:
                    failures.append("%s, %d ranks: not run (more ranks than cores)" % (name, n))
                    continue
                values, why = run(cmd(n), venv)
                if values is None:
                    failures.append("%s, %d ranks: failed: %s" % (name, n, why))
                    continue
                for key, value in values.items():
                    samples[i].setdefault(key, []).append(value)
        keys = sorted(samples[0], key=lambda k: (["barrier", "bcast", "allreduce", "allgather",
                                                  "alltoall"].index(k[0]), k[1]))
        by_op = {}
        for key in keys:
            medians = [statistics.median(s[key]) if key in s else None for s in samples]
            by_op.setdefault(key[0], []).append((key[1], medians))
            cells = ["%.2f" % m if m is not None else "-" for m in medians]
            ratios = ["%.2f" % (medians[0] / m) if m else "-" for m in medians[1:3]]
            print("| %d | %s | %d | %s |%s" % (n, key[0], key[1], " | ".join(cells),
                                               "".join(" %s |" % r for r in ratios)))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            for op, rows in by_op.items():
                if len(rows) > 1:       # the barrier is one point
                    images.extend(plot(args.out, n, op, [v[0] for v in variants], rows))
    for f in sorted(set(failures)):
        print("- %s" % f)
    if images:
        print("\nplots: " + ", ".join(images))


if __name__ == "__main__":
    main()
