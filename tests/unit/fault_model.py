#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An independent model of the fault injector's decisions (src/port/fault.h),
written from its description, for the golden counts of test_fault.c: the
run_trace of "drop=10,dup=10,reorder=10,corrupt=10,seed=12345", 20000 frames
on 3 streams, no ECN, no capture.

    python3 tests/unit/fault_model.py   # prints dropped duplicated reordered corrupted
"""
import math

M64 = (1 << 64) - 1
ONE = 100_000_000  # FAULT_PROB_ONE: 100 %
NEVER = M64


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Xoshiro256ss:
    def __init__(self, state):
        self.s = list(state)

    def next(self):
        s0, s1, s2, s3 = self.s
        r = (rotl((s1 * 5) & M64, 7) * 9) & M64
        t = (s1 << 17) & M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        self.s = [s0, s1, s2, s3]
        return r


def gap(gen, prob):
    """Frames before the next event: floor(ln U / ln(1 - p)), U in (0, 1]."""
    if prob == 0:
        return NEVER
    if prob >= ONE:
        return 0
    u = ((gen.next() >> 11) + 1) * 2.0 ** -53
    g = math.floor(math.log(u) / math.log1p(-prob / ONE))
    return g if g < 2 ** 53 else NEVER


def trace(probs, seed, frames, streams=3):
    """probs: drop, corrupt, dup, reorder in units of 1e-6 percent."""
    x = seed
    gens = []
    for _ in range(5):  # drop, corrupt, dup, reorder, ecn
        state = []
        for _ in range(4):
            x, z = splitmix64(x)
            state.append(z)
        gens.append(Xoshiro256ss(state))
    nxt = [gap(gens[k], probs[k]) for k in range(4)]
    held = [False] * streams
    dropped = duplicated = reordered = corrupted = 0
    for i in range(frames):
        ev = set()
        for k in range(4):
            if nxt[k] == i:
                ev.add(k)
                if k == 1:
                    gens[1].next()  # the corrupted byte's position and value
                g = gap(gens[k], probs[k])
                nxt[k] = i + 1 + g if g < NEVER - i - 1 else NEVER
        s = i % streams
        if 0 in ev:
            dropped += 1
            continue
        if 1 in ev:  # frames of the trace are longer than 14 bytes
            corrupted += 1
        if 2 in ev:
            duplicated += 1
        was_held = held[s]
        held[s] = False
        if not was_held and 3 in ev:
            held[s] = True
            reordered += 1
    return dropped, duplicated, reordered, corrupted


if __name__ == "__main__":
    print(*trace([10 * 1_000_000] * 4, 12345, 20000))
