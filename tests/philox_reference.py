"""Philox4x32-10 in Python integers, from the paper (Salmon et al., SC'11): the reference
kael's random streams are tested against."""

from __future__ import annotations

MASK32, MASK64 = (1 << 32) - 1, (1 << 64) - 1


def reference(counter, key) -> list[int]:
    """Philox4x32-10 from the paper, in Python integers."""
    c, (k0, k1) = list(counter), key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK32, (k1 + 0xBB67AE85) & MASK32
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK32, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK32]
    return c


def word_of(w: int, key: int) -> int:
    """kael's `philox32` draw of counter w: in its group of 128 counters over 16 blocks,
    with t = w & 127, word t >> 5 of the group's block t & 15, its 16-bit halves swapped
    where bit 4 of t is set."""
    t = w & 127
    block = (w >> 7) * 16 + (t & 15)
    word = reference([block & MASK32, block >> 32, 0, 0], [key & MASK32, key >> 32])[t >> 5]
    return (word << 16 | word >> 16) & MASK32 if t & 16 else word
