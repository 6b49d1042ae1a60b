#!/usr/bin/python3
"""tools/bench/run_benchmarks.py's 2-thread ratio per placement of the vCPUs: a round counts
where the placements before and after it agree (near, far, one core), and the ratio is the
median of those rounds' kiln/ORT. Prints "bench_placement: all
checks pass"."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
import run_benchmarks as rb  # noqa: E402


def check(cond, what):
    if not cond:
        sys.exit(f"bench_placement: FAILED: {what}")


near, far, one_core = (130, 1.0), (570, 0.98), (85, 0.5)
check(rb.placement_kind(near) == "near", "a 130 ns round trip is near")
check(rb.placement_kind(far) == "far", "a 570 ns round trip is far")
check(rb.placement_kind(one_core) == "one core", "half the FMA peak with both busy is one core")
check(rb.placement_kind((None, None)) is None, "no round trip (one CPU) is no placement")
check(rb.placement_kind((200, None)) == "near", "no FMA share still classifies by round trip")

# Rounds: near, near -> far (straddles), far, far, far -> one core (straddles).
kiln = [1.0, 9.0, 2.0, 2.4, 9.0]
ort = [1.25, 1.0, 2.0, 2.0, 1.0]
trips = [near, near, far, far, far, one_core]
got = rb.by_placement(kiln, ort, trips)
check(set(got) == {"near", "far"}, f"only rounds whose ends agree count: {got}")
check(got["near"] == (0.8, 1), f"near: one round, 1.0 / 1.25: {got['near']}")
check(abs(got["far"][0] - 1.1) < 1e-12 and got["far"][1] == 2,
      f"far: the median of 2.0 / 2.0 and 2.4 / 2.0: {got['far']}")
check(rb.placement_ratios({"by_placement": got}) == "near 0.80 (1) · far 1.10 (2)",
      rb.placement_ratios({"by_placement": got}))
check(rb.placement_ratios({}) == "-", "a row without 2-thread placements")
check(rb.by_placement([1.0], [1.0], [near, one_core]) == {}, "a straddling round alone: nothing")
# The median of the rounds' ratios, not the ratio of the medians (2 / 2 here).
got = rb.by_placement([1.0, 3.0, 2.0], [2.0, 1.0, 4.0], [near] * 4)
check(got == {"near": (0.5, 3)}, f"the median of 0.5, 3.0 and 0.5: {got}")
print("bench_placement: all checks pass")
