#!/usr/bin/env python3
"""How many of UCX 1.13's non-InfiniBand configuration variables this build
honours, and how many it accepts without effect, from both ucx_info outputs:

  UCX 1.13 (Debian's ucx_info, run without LD_LIBRARY_PATH): `ucx_info -c -a`
  this build: `ucx_info -c -a -f`, where a field's documentation lists the
  other names it is read from ("# also read from: ...") and says when it has
  no effect here, and accepted-only names are listed as comments.

Non-InfiniBand: every name but those of the ib, rc, ud, dc and rdmacm
transports (UCX_IB_*, UCX_RC_*, UCX_UD_*, UCX_DC_*, UCX_RDMA_CM_*).

With --doc FILE, fails unless FILE states the counts in the sentence this
script prints, so the documentation cannot drift. Exits 77 (skipped) when
UCX 1.13's ucx_info is not installed.

usage: config_coverage.py OUR_UCX_INFO [--ucx /usr/bin/ucx_info] [--doc FILE] [--list]
"""
import argparse
import os
import re
import subprocess
import sys

IB_PREFIXES = ("UCX_IB_", "UCX_RC_", "UCX_UD_", "UCX_DC_", "UCX_RDMA_CM_")


def ucx_names(ucx_info):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env = {k: v for k, v in env.items() if not k.startswith("UCX_")}
    out = subprocess.run([ucx_info, "-c", "-a"], env=env, check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        match = re.match(r"^(UCX_[A-Z0-9_]+)( \(deprecated\))?=?", line)
        if match and not match.group(1).startswith(IB_PREFIXES):
            names.add(match.group(1))
    return names


def our_names(ucx_info):
    """(honoured, accepted without effect) name sets of this build."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UCX_")}
    env["UCX_CONFIG_FILE"] = ""
    out = subprocess.run([ucx_info, "-c", "-a", "-f"], env=env, check=True,
                         capture_output=True, text=True).stdout
    honoured, no_effect = set(), set()
    also, inert = [], False  # from the documentation block of the next field
    for line in out.splitlines():
        field = re.match(r"^#?(UCX_[A-Z0-9_]+)=", line)
        accepted = re.match(r"^# (UCX_[A-Z0-9_]+): accepted for compatibility", line)
        if line.startswith("# also read from: "):
            also = [n.strip() for n in line[len("# also read from: "):].split(",")]
        elif line.startswith("# no effect here"):
            inert = True
        elif accepted:
            no_effect.add(accepted.group(1))
        elif field:
            (no_effect if inert else honoured).update([field.group(1)] + also)
            also, inert = [], False
    return honoured - no_effect, no_effect


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours")
    parser.add_argument("--ucx", default="/usr/bin/ucx_info")
    parser.add_argument("--doc")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()

    if not os.access(args.ucx, os.X_OK):
        print("UCX 1.13's ucx_info is not installed (%s): skipped" % args.ucx)
        return 77
    theirs = ucx_names(args.ucx)
    honoured, no_effect = our_names(args.ours)
    h = sorted(theirs & honoured)
    n = sorted((theirs & no_effect) - honoured)
    missing = sorted(theirs - honoured - no_effect)

    sentence = ("Of the %d non-InfiniBand variables that UCX 1.13's `ucx_info -c -a` "
                "prints, %d are honoured here, %d are accepted without effect and "
                "%d are not accepted." % (len(theirs), len(h), len(n), len(missing)))
    print(sentence)
    if args.list:
        for title, names in (("honoured", h), ("accepted without effect", n),
                             ("not accepted", missing)):
            print("\n%s (%d):\n  %s" % (title, len(names), "\n  ".join(names)))
    elif missing:
        print("not accepted: " + ", ".join(missing))

    if args.doc:
        with open(args.doc) as doc:
            text = " ".join(doc.read().split())
        if sentence not in text:
            print("FAIL: %s does not say (update it):\n%s" % (args.doc, sentence))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
