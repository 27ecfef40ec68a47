#!/usr/bin/env python3
"""A barrier and an 8-byte allreduce from deferred work against Open MPI's.

  bench/dwq_coll/compare.py [--build DIR] [--rounds N] [--iters N] [--ranks 2,4]

For each rank count, round after round (A B C A B C ...):
  A  ucp_dwq_coll on ucx-ng: dissemination barrier from triggered operations,
     allreduce from atomics counted at the target (ucp_mem_bind_cntr);
  B  mpi_coll_lat under Open MPI (pml ucx) on ucx-ng;
  C  mpi_coll_lat under Open MPI (pml ucx) on Debian's UCX 1.13;
and prints the medians over the rounds (microseconds per operation) and the
ratios A/B and A/C. All processes share this machine's cores: with more
ranks than cores the numbers measure the scheduler as much as the library
(ours then sleep when idle, -w, as Open MPI yields under --oversubscribe).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UCX_LIBDIR = "/usr/lib/x86_64-linux-gnu"
TIMEOUT = 300


def parse(text):
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("barrier_us", "allreduce8_us"):
            values[parts[0]] = float(parts[1])
    return values


def run(cmd, env):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    values = parse(proc.stdout)
    if proc.returncode != 0 or len(values) != 2:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr[-2000:]))
    return values


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--ranks", default="2,4")
    args = ap.parse_args()
    ours = os.path.join(args.build, "bench", "ucp_dwq_coll")
    mpi = os.path.join(args.build, "bench", "mpi_coll_lat")
    libs = ":".join(os.path.join(args.build, d) for d in ("ucp", "ucs", "uct", "ucm"))
    for tool in (ours, mpi):
        if not os.access(tool, os.X_OK):
            sys.exit("%s is not built" % tool)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               UCX_WARN_UNUSED_ENV_VARS="n")
    env.pop("UCX_CONFIG_FILE", None)

    def mpirun(n, libdir):
        cmd = ["mpirun.openmpi", "--oversubscribe", "-np", str(n), "--mca", "pml", "ucx",
               "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
               "--mca", "btl", "self"]
        if libdir:
            cmd += ["-x", "LD_LIBRARY_PATH=" + libdir]
        return cmd + [mpi, str(args.iters)]

    def ours_cmd(n):
        # More ranks than cores: ours sleep when idle (-w), as Open MPI
        # yields under --oversubscribe; spinning ranks would starve each other.
        sleep = ["-w"] if n > (os.cpu_count() or 1) else []
        return [ours, "-n", str(n), "-i", str(args.iters)] + sleep

    variants = [("deferred work, ucx-ng", ours_cmd,
                 dict(env, LD_LIBRARY_PATH=libs)),
                ("Open MPI on ucx-ng", lambda n: mpirun(n, libs), env),
                ("Open MPI on UCX 1.13", lambda n: mpirun(n, None), env)]
    print("| ranks | operation | %s | deferred / OMPI(ucx-ng) | deferred / OMPI(UCX 1.13) |"
          % " | ".join(v[0] + " (us)" for v in variants))
    print("| --- | --- |%s --- | --- |" % (" ---: |" * len(variants)))
    for n in [int(x) for x in args.ranks.split(",")]:
        samples = [{"barrier_us": [], "allreduce8_us": []} for _ in variants]
        for _ in range(args.rounds):
            for i, (_, cmd, venv) in enumerate(variants):
                values = run(cmd(n), venv)
                for key in samples[i]:
                    samples[i][key].append(values[key])
        for key, name in (("barrier_us", "barrier"), ("allreduce8_us", "allreduce 8 B")):
            medians = [statistics.median(s[key]) for s in samples]
            print("| %d | %s | %s | %.2f | %.2f |" % (
                n, name, " | ".join("%.2f" % m for m in medians),
                medians[0] / medians[1], medians[0] / medians[2]))


if __name__ == "__main__":
    main()
