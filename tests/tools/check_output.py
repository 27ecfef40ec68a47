#!/usr/bin/env python3
"""Runs a command and checks its exit code and that its output holds given texts.

usage: check_output.py CMD [ARGS...] [--expect-exit N] [--expect TEXT]... [--reject TEXT]...

--reject TEXT: the output must not hold TEXT.
"""
import subprocess
import sys


def main(argv):
    cmd, expects, rejects, expect_exit = [], [], [], 0
    i = 0
    while i < len(argv):
        if argv[i] == '--expect':
            expects.append(argv[i + 1])
            i += 2
        elif argv[i] == '--reject':
            rejects.append(argv[i + 1])
            i += 2
        elif argv[i] == '--expect-exit':
            expect_exit = int(argv[i + 1])
            i += 2
        else:
            cmd.append(argv[i])
            i += 1
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    output = proc.stdout + proc.stderr
    ok = True
    if proc.returncode != expect_exit:
        print(f"exit code {proc.returncode}, expected {expect_exit}")
        ok = False
    for text in expects:
        if text not in output:
            print(f"missing from output: {text!r}")
            ok = False
    for text in rejects:
        if text in output:
            print(f"unexpected in output: {text!r}")
            ok = False
    if not ok:
        print("---- output ----")
        print(output)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
