#!/usr/bin/env python3
"""Records a fresh corpus from real traffic and replays it on every target.

    check_recording.py RECORD_CORPUS TARGET_DIR

RECORD_CORPUS writes into a scratch directory; every fuzz target must get
inputs, and each target must run all of its own without a report (-runs=0:
no fuzzing, the inputs once each). Real traffic that a target cannot take
means the recorder or the target fell out of step with the wire format.
"""
import os
import subprocess
import sys
import tempfile

TARGETS = ["fuzz_address", "fuzz_rkey", "fuzz_tcp_rx", "fuzz_cs_frame", "fuzz_ucp_am",
           "fuzz_mm_fifo"]


def main(recorder, target_dir):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "halt_on_error=1:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    failed = False
    with tempfile.TemporaryDirectory(prefix="recorded-") as out:
        rec = subprocess.run([recorder, out], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace")
        print(rec.stdout[-4000:])
        if rec.returncode != 0:
            print(f"record_corpus failed (exit {rec.returncode})")
            return 1
        for target in TARGETS:
            inputs = os.path.join(out, target)
            count = len(os.listdir(inputs)) if os.path.isdir(inputs) else 0
            if count == 0:
                print(f"{target}: no input recorded")
                failed = True
                continue
            with tempfile.TemporaryDirectory(prefix=target + "-") as artifacts:
                run = subprocess.run(
                    [os.path.join(target_dir, target), "-runs=0",
                     f"-artifact_prefix={artifacts}/", inputs],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    errors="replace")
            if run.returncode != 0:
                print(run.stdout[-8000:])
                print(f"{target}: FAILED on its recorded inputs (exit {run.returncode})")
                failed = True
            else:
                print(f"{target}: {count} recorded inputs replayed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
