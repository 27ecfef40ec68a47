#!/usr/bin/env python3
"""Every function of the installed headers has a documentation comment.

  check_api_docs.py BUILD_DIR SOURCE_DIR

A function declared at the start of a line in a header that `meson install`
puts under include/ must follow a /** ... */ block (blank lines between
allowed), or sit in a /**@{*/ ... /**@}*/ group that follows one. Prints
each undocumented function with its file and line; exits 1 if any.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from installed_headers import installed_headers  # noqa: E402

DECLARATION = re.compile(r"^(?!typedef|#|extern\b|\s)[A-Za-z_][\w\s\*]*?\b((?:ucp|ucs|ucm)_\w+)\s*\(")


def doc_before(lines, index):
    """Whether a /** */ comment ends right above lines[index] (blank lines
    and a group opener in between allowed)."""
    i = index - 1
    while i >= 0 and (lines[i].strip() == "" or lines[i].strip() == "/**@{*/"):
        i -= 1
    if i < 0 or not lines[i].rstrip().endswith("*/"):
        return False
    while i >= 0 and "/*" not in lines[i]:
        i -= 1
    return i >= 0 and lines[i].lstrip().startswith("/**")


def undocumented(path):
    with open(path) as f:
        lines = f.read().split("\n")
    missing = []
    group_documented = None   # inside /**@{*/ ... /**@}*/: was it documented?
    for n, line in enumerate(lines):
        if line.strip() == "/**@{*/":
            group_documented = doc_before(lines, n)
            continue
        if line.strip() == "/**@}*/":
            group_documented = None
            continue
        m = DECLARATION.match(line)
        if m is None:
            continue
        if group_documented or doc_before(lines, n):
            continue
        missing.append((n + 1, m.group(1)))
    return missing


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build_dir, source_dir = sys.argv[1:]
    headers = installed_headers(build_dir, source_dir)
    if not headers:
        print("FAIL: no installed headers found")
        return 1
    count = 0
    for header in headers:
        for line, name in undocumented(os.path.join(source_dir, header)):
            print("FAIL: %s:%d: %s() has no /** */ documentation" % (header, line, name))
            count += 1
    if count:
        print("%d undocumented function(s)" % count)
        return 1
    print("ok: every function of %d installed headers is documented" % len(headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
