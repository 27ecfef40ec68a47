#!/usr/bin/env python3
"""Reads meson's testlog.json files (one per build) and prints the closing
line CI looks for, counting the tests of every log."""
import json
import os
import sys

OK = {"OK", "EXPECTEDFAIL", "SKIP"}


def count(path, label, totals):
    """Adds the results of one log to totals; False if it cannot be read."""
    try:
        log = open(path)
    except OSError as err:
        print(f"no test log: {err}")
        return False
    with log:
        for line in log:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            result = entry["result"]
            if result == "SKIP":
                totals["skipped"] += 1
            if result in OK:
                totals["passed"] += 1
            else:
                totals["failed"] += 1
                print(f"FAILED: {label}{entry['name']}")
    return True


def main(paths):
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    readable = True
    for path in paths:
        # Builds are told apart by their directory when there are several.
        label = ""
        if len(paths) > 1:
            label = os.path.basename(os.path.dirname(os.path.dirname(path))) + ": "
        readable = count(path, label, totals) and readable
    if not readable:
        totals["failed"] += 1
    if totals["passed"] + totals["failed"] == 0:
        print("0 passed, 1 failed (no test ran)")
        return 1
    print(f"{totals['passed']} passed, {totals['failed']} failed, "
          f"{totals['skipped']} skipped")
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: summarize.py TESTLOG.json...")
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
