/* ref.h - host tensors and plain-C reference helpers for the end-to-end
 * tests: tensors stored in a dtype's host format (bf16/f16 as uint16 bit
 * patterns, via tc_store_elem), random fills that never produce zeros, and
 * error norms. Header-only: every function is static. */
#ifndef TILEC_TEST_REF_H
#define TILEC_TEST_REF_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct Ten {
    DType dt;
    int rank;
    int64_t shape[TENSOR_MAXRANK];
    int64_t n;
    unsigned char *data;
} Ten;

static inline size_t ten_esize(DType dt) { return (size_t)(dtype_bits(dt) / 8); }

static inline Ten ten_new(DType dt, int rank, const int64_t *shape)
{
    Ten t;
    memset(&t, 0, sizeof t);
    t.dt = dt;
    t.rank = rank;
    t.n = 1;
    for (int i = 0; i < rank; i++) {
        t.shape[i] = shape[i];
        t.n *= shape[i];
    }
    t.data = calloc((size_t)(t.n ? t.n : 1), ten_esize(dt));
    return t;
}

static inline void ten_free(Ten *t)
{
    free(t->data);
    t->data = NULL;
}

static inline double ten_get(const Ten *t, int64_t i) { return tc_load_elem(t->dt, t->data + (size_t)i * ten_esize(t->dt)); }
static inline void ten_set(Ten *t, int64_t i, double x) { tc_store_elem(t->dt, t->data + (size_t)i * ten_esize(t->dt), x); }

/* xorshift64*: a fixed seed per test, varied values. */
static inline double ref_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * UINT64_C(2685821657736338717)) >> 11) * 0x1p-53;
}

/* Magnitudes in [lo, hi], random sign: never zero. */
static inline void ten_random(Ten *t, uint64_t *rng, double lo, double hi)
{
    for (int64_t i = 0; i < t->n; i++) {
        double m = lo + (hi - lo) * ref_rand(rng);
        ten_set(t, i, ref_rand(rng) < 0.5 ? -m : m);
    }
}

/* Outputs start as NaN so an element the kernel forgets shows up. */
static inline void ten_poison(Ten *t)
{
    for (int64_t i = 0; i < t->n; i++)
        ten_set(t, i, dtype_is_float(t->dt) ? NAN : -7);
}

static inline InterpArg ten_arg(const Ten *t)
{
    InterpArg a;
    memset(&a, 0, sizeof a);
    a.data = t->data;
    a.rank = t->rank;
    int64_t stride = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        a.shape[i] = t->shape[i];
        a.strides[i] = stride;
        stride *= t->shape[i];
    }
    return a;
}

static inline InterpArg scalar_arg(double f, int64_t i)
{
    InterpArg a;
    memset(&a, 0, sizeof a);
    a.f = f;
    a.i = i;
    return a;
}

/* Relative Frobenius error of got (a tensor) against want (doubles); a NaN
 * in got counts as an infinite error. */
static inline double ref_rel_err(const Ten *got, const double *want)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < got->n; i++) {
        double g = ten_get(got, i), e = isnan(g) ? INFINITY : fabs(g - want[i]);
        num += e * e;
        den += want[i] * want[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* ref_rel_err, printing the worst element when it exceeds tol. */
static inline double ref_check(const char *what, const Ten *got, const double *want, double tol)
{
    double rel = ref_rel_err(got, want);
    if (rel <= tol)
        return rel;
    double worst = -1;
    int64_t wi = 0;
    for (int64_t i = 0; i < got->n; i++) {
        double g = ten_get(got, i), e = isnan(g) ? INFINITY : fabs(g - want[i]);
        if (e > worst || isnan(e))
            worst = e, wi = i;
    }
    fprintf(stderr, "%s: relative error %.3g > %.3g; worst at [%lld]: got %.8g want %.8g\n",
            what, rel, tol, (long long)wi, ten_get(got, wi), want[wi]);
    return rel;
}

/* Attention forward in double: O [z, h, n, d] and LSE [z, h, n] (log2
 * units) from Q [z, h, n, d], K and V [z, hk, n, d] (H / HK query heads
 * share a K/V head), scores scaled by scale; causal: key j <= query i. */
static inline void ref_attention(int64_t z, int64_t h, int64_t hk, int64_t n, int64_t d, bool causal,
                                 const Ten *q, const Ten *k, const Ten *v, double scale, double *o,
                                 double *lse)
{
    int64_t grp = h / hk;
    double *s = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t zh = 0; zh < z * h; zh++) {
        const int64_t qb = zh * n * d, kb = ((zh / h) * hk + (zh % h) / grp) * n * d;
        for (int64_t i = 0; i < n; i++) {
            double mx = -INFINITY, l = 0;
            int64_t hi = causal ? i + 1 : n;
            for (int64_t j = 0; j < hi; j++) {
                double dot = 0;
                for (int64_t e = 0; e < d; e++)
                    dot += ten_get(q, qb + i * d + e) * ten_get(k, kb + j * d + e);
                s[j] = dot * scale * 1.4426950408889634;
                mx = fmax(mx, s[j]);
            }
            for (int64_t j = 0; j < hi; j++)
                l += exp2(s[j] - mx);
            for (int64_t e = 0; e < d; e++) {
                double acc = 0;
                for (int64_t j = 0; j < hi; j++)
                    acc += exp2(s[j] - mx) * ten_get(v, kb + j * d + e);
                o[qb + i * d + e] = acc / l;
            }
            lse[zh * n + i] = mx + log2(l);
        }
    }
    free(s);
}

#endif
