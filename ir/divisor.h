/* divisor.h - the language's divisor(a, b): the largest divisor of a that is
 * at most b (at least 1; every d divides 0, so divisor(0, b) = max(b, 1); the
 * sign of a does not matter). One definition for the compiler's constant
 * folding, the interpreter and the runtime's grid rules.
 *
 * |a| is limited to TC_DIVISOR_MAX so that the O(sqrt(a)) search stays under
 * ~65k steps: tc_divisor returns -1 past it (the callers report it).
 */
#ifndef TILEC_DIVISOR_H
#define TILEC_DIVISOR_H

#include <stdint.h>

#define TC_DIVISOR_MAX ((int64_t)1 << 32)

static inline int64_t tc_divisor(int64_t a, int64_t b)
{
    if (a < -TC_DIVISOR_MAX || a > TC_DIVISOR_MAX)
        return -1;
    if (a < 0)
        a = -a;
    if (b < 1)
        b = 1;
    if (a == 0)
        return b;
    if (b >= a)
        return a;
    int64_t best = 1;
    for (int64_t i = 1; i * i <= a; i++) {
        if (a % i)
            continue;
        if (i <= b && i > best)
            best = i;
        if (a / i <= b && a / i > best)
            best = a / i;
    }
    return best;
}

#endif
