#!/usr/bin/env python3
"""Merges the ucp_trace.<pid>.txt files written by libucp_trace.so.

    summarize_trace.py DIR [--caller REGEX] [--no-progress]

prints, per calling library, every distinct call description with its total
count over all processes, most frequent first.
"""
import argparse
import collections
import glob
import os
import re
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir")
    parser.add_argument("--caller", help="only callers matching this regular expression")
    parser.add_argument("--no-progress", action="store_true",
                        help="leave out ucp_worker_progress and request polling")
    args = parser.parse_args()

    totals = collections.Counter()
    files = glob.glob(os.path.join(args.dir, "ucp_trace.*.txt"))
    for path in files:
        with open(path) as f:
            for line in f:
                count, caller, desc = line.rstrip("\n").split("\t", 2)
                totals[(caller, desc)] += int(count)
    if not files:
        print(f"no ucp_trace.*.txt in {args.dir}", file=sys.stderr)
        return 1

    by_caller = collections.defaultdict(list)
    for (caller, desc), count in totals.items():
        if args.caller and not re.search(args.caller, caller):
            continue
        if args.no_progress and re.match(
                r"ucp_(worker_progress|request_check_status|request_test|"
                r"request_is_completed)", desc):
            continue
        by_caller[caller].append((count, desc))
    print(f"{len(files)} processes")
    for caller in sorted(by_caller):
        print(f"\n== {caller}")
        for count, desc in sorted(by_caller[caller], key=lambda x: (-x[0], x[1])):
            print(f"{count:10}  {desc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
