"""Issue 23's goals against the hardware, from one run of bench/compare.

Every goal is a ratio of two numbers measured in the same run: ucx-ng
against a floor (one cache line bounced between two processes, memcpy in
one process, bare stores in ucp_put_floor) or against UCX 1.13.
"""

# (label, test, size, reference, goal, higher_is_better)
#   reference: "cacheline", "memcpy", "UCX 1.13"
GOALS = [
    ("shm tag latency 8 B", "tag_lat", 8, "cacheline", 1.7, False),
    ("shm AM latency 8 B", "ucp_am_lat", 8, "cacheline", 1.7, False),
    ("shm stream latency 8 B", "stream_lat", 8, "cacheline", 1.7, False),
    ("shm tag latency 64 KiB", "tag_lat", 65536, "UCX 1.13", 0.6, False),
    ("shm tag bandwidth 1 MiB", "tag_bw", 1 << 20, "memcpy", 0.7, True),
    ("shm stream bandwidth 1 MiB", "stream_bw", 1 << 20, "memcpy", 0.7, True),
    ("shm AM bandwidth 1 MiB", "ucp_am_bw", 1 << 20, "memcpy", 0.7, True),
    ("shm tag bandwidth 16 MiB", "tag_bw", 16 << 20, "memcpy", 0.9, True),
    ("shm stream bandwidth 16 MiB", "stream_bw", 16 << 20, "memcpy", 0.9, True),
    ("shm AM bandwidth 16 MiB", "ucp_am_bw", 16 << 20, "memcpy", 0.9, True),
    ("shm stream bandwidth 1 MiB", "stream_bw", 1 << 20, "UCX 1.13", 2.0, True),
]

# The tests and sizes the goals need, over shm.
TESTS = sorted({(test, size) for _, test, size, _, _, _ in GOALS})

# Bandwidth floors: memcpy of these sizes in one process.
MEMCPY_SIZES = sorted({size for _, _, size, ref, _, _ in GOALS if ref == "memcpy"})

# ucp_put_lat may exceed the bare stores of ucp_put_floor by this much.
PUT_SLACK = 0.03


def _row(label, value, unit, reference, ratio, goal, higher):
    met = (ratio >= goal) if higher else (ratio <= goal)
    return "| %s | %s %s | %s | %.2f | %s %.2f | %s |" % (
        label, ("%.3f" if unit == "usec" else "%.0f") % value, unit, reference, ratio,
        ">=" if higher else "<=", goal, "yes" if met else "**no**")


def lines(value, cacheline, memcpy, put_rows):
    """The goals table. value(variant, test, size) gives a median (usec or
    MB/s) or None; cacheline the floor in usec or None; memcpy {size: MB/s};
    put_rows ucp_put_floor's CSV rows of ucx-ng (one per round)."""
    out = ["| goal | ucx-ng | against | ratio | goal | met |",
           "|---|---|---|---|---|---|"]
    for label, test, size, ref, goal, higher in GOALS:
        ours = value("ucx-ng", test, size)
        unit = "MB/s" if higher else "usec"
        base = {"cacheline": cacheline, "memcpy": memcpy.get(size)}.get(
            ref, value("UCX 1.13", test, size))
        if ours is None or not base:
            out.append("| %s | - | %s | - | - | not measured |" % (label, ref))
            continue
        name = {"cacheline": "cache-line floor", "memcpy": "memcpy"}.get(ref, ref)
        reference = ("%s %.3f usec" if unit == "usec" else "%s %.0f MB/s") % (name, base)
        out.append(_row(label, ours, unit, reference, ours / base, goal, higher))
    if put_rows:
        # Every run: the library's put + progress over bare stores into the
        # same buffers, in the same pair of processes.
        ratios = [float(r["put_usec"]) / float(r["raw_usec"]) for r in put_rows
                  if float(r["raw_usec"]) > 0]
        if ratios:
            worst = max(range(len(ratios)), key=lambda i: ratios[i])
            row = put_rows[worst]
            out.append("| ucp_put_lat 8 B, worst of %d runs | %.4f usec (put + progress) | "
                       "bare stores %.4f usec (ucp_put_floor) | %.3f | <= %.2f | %s |" % (
                           len(ratios), float(row["put_usec"]), float(row["raw_usec"]),
                           ratios[worst], 1 + PUT_SLACK,
                           "yes" if ratios[worst] <= 1 + PUT_SLACK else "**no**"))
    else:
        out.append("| ucp_put_lat 8 B | - | ucp_put_floor | - | - | not measured |")
    return out
