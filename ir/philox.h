/* philox.h - Philox4x32-10, the counter-based generator of the `rand` and
 * `randint` builtins (docs/language.md), shared by the interpreter and the
 * tests (header only, no library dependency).
 *
 * Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3"
 * (SC'11), as Random123's philox4x32 with R = 10, curand's Philox4_32_10
 * and Triton's tl.randint: per round, with M0 = 0xD2511F53 and
 * M1 = 0xCD9E8D57,
 *   (c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))
 * then the key is bumped by (0x9E3779B9, 0xBB67AE85) before the next round.
 *
 * The builtins give offset o word (o & 3) of the generator at counter
 * (lo(o >> 2), hi(o >> 2), 0, 0) and key (lo(seed), hi(seed)): four
 * consecutive offsets share one counter and take its four words, so a
 * thread holding them runs the rounds once. `rand` maps the word to
 * (w >> 8) * 2^-24, exact in f32 and in [0, 1).
 */
#ifndef TILEC_PHILOX_H
#define TILEC_PHILOX_H

#include <stdint.h>

enum { TC_PHILOX_ROUNDS = 10 };
#define TC_PHILOX_M0 0xD2511F53u
#define TC_PHILOX_M1 0xCD9E8D57u
#define TC_PHILOX_W0 0x9E3779B9u
#define TC_PHILOX_W1 0xBB67AE85u

/* ctr[0..3] <- Philox4x32 with `rounds` rounds of key (k0, k1). */
static inline void tc_philox4x32(uint32_t ctr[4], uint32_t k0, uint32_t k1, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        uint64_t p0 = (uint64_t)TC_PHILOX_M0 * ctr[0], p1 = (uint64_t)TC_PHILOX_M1 * ctr[2];
        uint32_t c0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[0] = c0;
        ctr[1] = (uint32_t)p1;
        ctr[2] = c2;
        ctr[3] = (uint32_t)p0;
        k0 += TC_PHILOX_W0;
        k1 += TC_PHILOX_W1;
    }
}

/* randint(seed, offset): word (offset & 3) of Philox4x32-10 at counter
 * (lo(offset >> 2), hi(offset >> 2), 0, 0). */
static inline uint32_t tc_philox_randint(int64_t seed, uint64_t offset)
{
    uint64_t q = offset >> 2;
    uint32_t c[4] = { (uint32_t)q, (uint32_t)(q >> 32), 0, 0 };
    uint64_t s = (uint64_t)seed;
    tc_philox4x32(c, (uint32_t)s, (uint32_t)(s >> 32), TC_PHILOX_ROUNDS);
    return c[offset & 3];
}

/* rand(seed, offset): the top 24 bits of randint times 2^-24. */
static inline float tc_philox_rand(int64_t seed, uint64_t offset)
{
    return (float)(tc_philox_randint(seed, offset) >> 8) * 0x1p-24f;
}

#endif
