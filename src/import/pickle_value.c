/* pickle_value.c - accessors for the pickle value tree (see pickle_value.h). */
#include "pickle_value.h"

#include <string.h>

#include "memhist/error.h"

size_t mh__pv_len(const struct mh__pv *v)
{
    if (!v || v->type < MH__PV_TUPLE)
        return 0;
    return v->type == MH__PV_DICT ? 2 * (size_t)v->n : v->n;
}

int mh__pv_is_seq(const struct mh__pv *v)
{
    return v && (v->type == MH__PV_TUPLE || v->type == MH__PV_LIST);
}

const struct mh__pv *mh__pv_at(const struct mh__pv *v, size_t i)
{
    if (!v || v->type < MH__PV_TUPLE || v->type == MH__PV_DICT || i >= v->n)
        return NULL;
    return v->u.items[i];
}

int mh__pv_is_str(const struct mh__pv *v, const char *text)
{
    size_t n = strlen(text);
    return v && v->type == MH__PV_STR && v->n == n && memcmp(v->u.s, text, n) == 0;
}

const struct mh__pv *mh__pv_get(const struct mh__pv *d, const char *key)
{
    if (!d || d->type != MH__PV_DICT)
        return NULL;
    for (size_t k = d->n; k-- > 0;)
        if (mh__pv_is_str(d->u.items[2 * k], key))
            return d->u.items[2 * k + 1];
    return NULL;
}

/* Value of a big int when it fits 64 bits: sign in *neg. */
static int bigint_mag(const struct mh__pv *v, uint64_t *mag, int *neg)
{
    const unsigned char *b = (const unsigned char *)v->u.s;
    size_t n = v->n;
    *neg = n && (b[n - 1] & 0x80);
    unsigned char fill = *neg ? 0xff : 0;
    while (n > 0 && b[n - 1] == fill)
        n--;
    if (n > 8)
        return MH_EFORMAT;
    uint64_t x = 0;
    for (size_t i = 0; i < 8; i++)
        x |= (uint64_t)(i < n ? b[i] : fill) << (8 * i);
    *mag = x;
    return 0;
}

int mh__pv_i64(const struct mh__pv *v, int64_t *out)
{
    if (v && (v->type == MH__PV_INT || v->type == MH__PV_BOOL)) {
        *out = v->u.i;
        return 0;
    }
    uint64_t x;
    int neg;
    if (!v || v->type != MH__PV_BIGINT || bigint_mag(v, &x, &neg) || (!neg && x > INT64_MAX))
        return MH_EFORMAT;
    *out = (int64_t)x;
    return 0;
}

int mh__pv_u64(const struct mh__pv *v, uint64_t *out)
{
    if (v && (v->type == MH__PV_INT || v->type == MH__PV_BOOL)) {
        if (v->u.i < 0)
            return MH_EFORMAT;
        *out = (uint64_t)v->u.i;
        return 0;
    }
    int neg;
    if (!v || v->type != MH__PV_BIGINT || bigint_mag(v, out, &neg) || neg)
        return MH_EFORMAT;
    return 0;
}

int mh__pv_f64(const struct mh__pv *v, double *out)
{
    if (v && v->type == MH__PV_FLOAT) {
        *out = v->u.f;
        return 0;
    }
    int64_t i;
    if (mh__pv_i64(v, &i))
        return MH_EFORMAT;
    *out = (double)i;
    return 0;
}

int mh__pv_bool(const struct mh__pv *v, int *out)
{
    if (!v || (v->type != MH__PV_BOOL && v->type != MH__PV_INT))
        return MH_EFORMAT;
    *out = v->u.i != 0;
    return 0;
}

const char *mh__pv_type_name(const struct mh__pv *v)
{
    static const char *const names[] = {"None",  "bool",  "int",  "int",  "float", "str",
                                        "bytes", "tuple", "list", "dict", "set",   "frozenset", "handle"};
    if (!v)
        return "nothing";
    return v->type < sizeof names / sizeof names[0] ? names[v->type] : "?";
}
