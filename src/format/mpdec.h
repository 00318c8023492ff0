/* mpdec.h - a small, bounds-checked msgpack decoder for the reader.
 *
 * The reader decodes its own fixed layout with these inline functions rather
 * than building msgpack-c objects: every read is checked against the end of
 * the chunk, and nothing allocates. Internal to src/format. */
#ifndef MH_FORMAT_MPDEC_H
#define MH_FORMAT_MPDEC_H

#include <stddef.h>
#include <stdint.h>

struct mh__mp {
    const uint8_t *p, *end;
};

static inline uint64_t mh__be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* An integer: 0 = non-negative (bits in *v), 1 = negative (two's complement
 * bits in *v), -1 = not an integer or cut short. */
static inline int mh__mp_int(struct mh__mp *m, uint64_t *v)
{
    if (m->p >= m->end)
        return -1;
    uint8_t b = *m->p;
    if (b <= 0x7f) {
        *v = b;
        m->p++;
        return 0;
    }
    if (b >= 0xe0) {
        *v = (uint64_t)(int64_t)(int8_t)b;
        m->p++;
        return 1;
    }
    if (b < 0xcc || b > 0xd3)
        return -1;
    int n = 1 << ((b - 0xcc) & 3);
    if (m->end - m->p < 1 + n)
        return -1;
    uint64_t x = mh__be(m->p + 1, n);
    m->p += 1 + n;
    if (b <= 0xcf) {
        *v = x;
        return 0;
    }
    int shift = 64 - 8 * n; /* sign-extend int8..int64 */
    *v = (uint64_t)((int64_t)(x << shift) >> shift);
    return (int)(*v >> 63);
}

static inline int mh__mp_uint(struct mh__mp *m, uint64_t *v)
{
    return mh__mp_int(m, v) == 0 ? 0 : -1;
}

static inline int mh__mp_nil(struct mh__mp *m)
{
    if (m->p < m->end && *m->p == 0xc0) {
        m->p++;
        return 1;
    }
    return 0;
}

/* Container header of the given family; -1 if the next value is not one or
 * its count cannot fit in the remaining bytes (every element takes >= 1). */
static inline int mh__mp_container(struct mh__mp *m, uint32_t *n, uint8_t fix, uint8_t c16,
                                   uint32_t per)
{
    if (m->p >= m->end)
        return -1;
    const uint8_t *p = m->p;
    uint8_t b = *p;
    if ((b & 0xf0) == fix) {
        *n = b & 0x0f;
        p++;
    } else if (b == c16 || b == c16 + 1) {
        int k = b == c16 ? 2 : 4;
        if (m->end - p < 1 + k)
            return -1;
        *n = (uint32_t)mh__be(p + 1, k);
        p += 1 + k;
    } else {
        return -1;
    }
    if ((uint64_t)*n * per > (uint64_t)(m->end - p))
        return -1;
    m->p = p;
    return 0;
}

static inline int mh__mp_array(struct mh__mp *m, uint32_t *n)
{
    return mh__mp_container(m, n, 0x90, 0xdc, 1);
}

static inline int mh__mp_map(struct mh__mp *m, uint32_t *n)
{
    return mh__mp_container(m, n, 0x80, 0xde, 2);
}

/* A str (or bin) value; *s points into the chunk, not NUL-terminated. */
static inline int mh__mp_str(struct mh__mp *m, const char **s, uint32_t *len)
{
    if (m->p >= m->end)
        return -1;
    uint8_t b = *m->p;
    int k;
    uint64_t n;
    if ((b & 0xe0) == 0xa0) {
        k = 0;
        n = b & 0x1f;
    } else if (b >= 0xd9 && b <= 0xdb) {
        k = 1 << (b - 0xd9);
    } else if (b >= 0xc4 && b <= 0xc6) {
        k = 1 << (b - 0xc4);
    } else {
        return -1;
    }
    if (m->end - m->p < 1 + k)
        return -1;
    if (k)
        n = mh__be(m->p + 1, k);
    const uint8_t *body = m->p + 1 + k;
    if (n > (uint64_t)(m->end - body))
        return -1;
    *s = (const char *)body;
    *len = (uint32_t)n;
    m->p = body + n;
    return 0;
}

/* Skips any one value (nesting bounded); -1 on malformed input. */
int mh__mp_skip(struct mh__mp *m, int depth);

#endif
