#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time over its committed corpus.

    run_fuzz.py TARGET CORPUS_DIR [--max-len N] [--seconds S] [--dict FILE]
                [--keep DIR]

New inputs go to a scratch directory (or --keep DIR), never into the
committed corpus. A crash, leak, timeout or sanitizer report fails the run;
libFuzzer writes the reproducer to $FUZZ_ARTIFACTS/<target>/ (default: a
fuzz-artifacts folder next to the target). The closing line gives the
figures: executions, coverage (cov), features (ft), corpus size.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("corpus")
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--seconds", type=int,
                    default=int(os.environ.get("FUZZ_SECONDS", "20")))
    ap.add_argument("--dict", help="libFuzzer dictionary (-dict=)")
    ap.add_argument("--keep", help="directory that receives the new inputs")
    args = ap.parse_args()

    name = os.path.basename(args.target)
    artifacts = os.path.join(
        os.environ.get("FUZZ_ARTIFACTS",
                       os.path.join(os.path.dirname(args.target), "fuzz-artifacts")),
        name)
    os.makedirs(artifacts, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "halt_on_error=1:detect_leaks=1")
    # A peer may announce a message of up to 2^56 bytes: the libraries
    # reserve it (virtual memory, touched only as data arrives) and handle a
    # failed allocation. So a huge allocation is no finding, its failure
    # path is what to check: allocations fail as in production, not abort.
    # Above 256 MiB they fail at once: ASan writes the shadow of what it
    # hands out (1/8 of it), which a production reservation never touches.
    env["ASAN_OPTIONS"] += ":allocator_may_return_null=1:max_allocation_size_mb=256"
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")

    with tempfile.TemporaryDirectory(prefix=name + "-") as scratch:
        new_inputs = args.keep or scratch
        os.makedirs(new_inputs, exist_ok=True)
        cmd = [args.target, new_inputs, args.corpus,
               f"-max_total_time={args.seconds}", f"-max_len={args.max_len}",
               "-timeout=30", "-rss_limit_mb=2048", "-malloc_limit_mb=1048576",
               "-print_final_stats=1",
               f"-artifact_prefix={artifacts}/"]
        if args.dict:
            cmd.append(f"-dict={args.dict}")
        print(" ".join(cmd), flush=True)
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
    out = proc.stdout
    status = [l for l in out.splitlines() if re.match(r"#\d+\s", l)]
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", out, re.M))
    if proc.returncode != 0:
        # The whole report: the sanitizer's stack and the reproducer's path.
        print(out[-20000:])
        print(f"{name}: FAILED (exit {proc.returncode}); reproducer in {artifacts}")
        return 1
    last = status[-1] if status else "(no status line)"
    print(f"{name}: {stats.get('number_of_executed_units', '?')} executions in "
          f"{args.seconds} s, {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
