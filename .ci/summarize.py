#!/usr/bin/env python3
"""Reads meson's testlog.json and prints the closing line CI looks for."""
import json
import sys

OK = {"OK", "EXPECTEDFAIL", "SKIP"}


def main(path):
    passed, failed, skipped = 0, 0, 0
    try:
        log = open(path)
    except OSError as err:
        print(f"no test log: {err}")
        print("0 passed, 1 failed")
        return 1
    with log:
        for line in log:
            line = line.strip()
            if not line:
                continue
            result = json.loads(line)["result"]
            if result == "SKIP":
                skipped += 1
            if result in OK:
                passed += 1
            else:
                failed += 1
                print("FAILED: " + json.loads(line)["name"])
    if passed + failed == 0:
        print("0 passed, 1 failed (no test ran)")
        return 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
