/* reader_events.c - decodes an events chunk into the reader's event array.
 *
 * The inverse of writer_events.c: each column is nil (all zero), one integer
 * (all equal) or an array with one integer per event; times are rebuilt from
 * deltas, addresses and sizes from the address ring, which advances exactly
 * as in the writer. The whole chunk is decoded before any of its events is
 * handed out, so a malformed chunk yields none. */
#include <string.h>

#include "memhist/error.h"
#include "reader_int.h"

/* One column into v[]/neg[]; returns 1 if it is a single value (in v[0]),
 * 0 if it has n values, -1 if malformed. */
static int column(struct mh__mp *m, uint32_t n, uint64_t *v, uint8_t *neg)
{
    if (mh__mp_nil(m)) {
        v[0] = 0;
        neg[0] = 0;
        return 1;
    }
    int s = mh__mp_int(m, &v[0]);
    if (s >= 0) {
        neg[0] = (uint8_t)s;
        return 1;
    }
    uint32_t k;
    if (mh__mp_array(m, &k) || k != n)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        s = mh__mp_int(m, &v[i]);
        if (s < 0)
            return -1;
        neg[i] = (uint8_t)s;
    }
    return 0;
}

#define FILL(field, type)                                                                          \
    for (uint32_t i = 0; i < n; i++)                                                               \
    evs[i].field = (type)v[one ? 0 : i]

static void apply_plain(struct mh_event *evs, uint32_t n, int col, const uint64_t *v, int one)
{
    if (one && v[0] == 0)
        return;
    switch (col) {
    case MH__COL_KIND: FILL(kind, uint8_t); break;
    case MH__COL_FLAGS: FILL(flags, uint8_t); break;
    case MH__COL_STACK: FILL(stack, uint32_t); break;
    case MH__COL_STREAM: FILL(stream, uint64_t); break;
    case MH__COL_DEVICE: FILL(device, int16_t); break;
    case MH__COL_THREAD: FILL(thread, uint32_t); break;
    case MH__COL_DUR: FILL(dur_ns, uint64_t); break;
    case MH__COL_STR: FILL(str, uint32_t); break;
    case MH__COL_STR2: FILL(str2, uint32_t); break;
    case MH__COL_AUX: FILL(aux, uint32_t); break;
    case MH__COL_CORRELATION: FILL(correlation, uint32_t); break;
    case MH__COL_POOL0: FILL(pool[0], uint32_t); break;
    case MH__COL_POOL1: FILL(pool[1], uint32_t); break;
    case MH__COL_CTX: FILL(ctx, uint64_t); break;
    }
}

static void apply_time(struct mh_event *evs, uint32_t n, uint64_t base, const uint64_t *v, int one)
{
    uint64_t t = base;
    for (uint32_t i = 0; i < n; i++) {
        t += v[one ? 0 : i];
        evs[i].time_ns = t;
    }
}

/* Addresses and sizes; -1 if a back-reference points outside the ring. */
static int apply_addr_size(struct mh_reader *r, uint32_t n, int a1, int s1)
{
    struct mh_event *evs = r->evs;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = r->cv[a1 ? 0 : i], s = r->cv2[s1 ? 0 : i], addr, size, pred = 0;
        if (r->cn[a1 ? 0 : i]) {
            uint64_t d = (uint64_t)(-((int64_t)a + 1));
            if (d > MH__RING_MAX_DIST || d > r->ring_pos)
                return -1;
            addr = 0;
            if (d) {
                addr = r->ring_addr[(r->ring_pos - d) % MH__RING_SIZE];
                pred = r->ring_size[(r->ring_pos - d) % MH__RING_SIZE];
            }
        } else {
            addr = r->prev_addr + mh__unzigzag(a);
        }
        if (r->cn2[s1 ? 0 : i])
            size = s;
        else if (s == 0)
            size = pred;
        else
            size = s & 1 ? (s >> 1) * 512 : s >> 1;
        evs[i].addr = addr;
        evs[i].size = size;
        if (addr) {
            r->ring_addr[r->ring_pos % MH__RING_SIZE] = addr;
            r->ring_size[r->ring_pos % MH__RING_SIZE] = size;
            r->ring_pos++;
            r->prev_addr = addr;
        }
    }
    return 0;
}

int mh__r_events(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off)
{
    struct mh__mp m = {p, p + len};
    uint32_t ncols;
    uint64_t n, base;
    if (mh__mp_array(&m, &ncols) || ncols < 2 + MH__NCOLS || mh__mp_uint(&m, &n) ||
        mh__mp_uint(&m, &base))
        return mh__r_fail(r, MH_EFORMAT, off, "malformed events chunk");
    if (n > MH__MAX_CHUNK_EVENTS)
        return mh__r_fail(r, MH_ELIMIT, off, "events chunk holds %llu events (limit %u)",
                          (unsigned long long)n, MH__MAX_CHUNK_EVENTS);
    struct mh_event *evs = r->evs;
    memset(evs, 0, sizeof *evs * n);
    int a1 = 0;
    for (int col = 0; col < MH__NCOLS; col++) {
        int addr_or_size = col == MH__COL_ADDR || col == MH__COL_SIZE;
        uint64_t *v = col == MH__COL_SIZE ? r->cv2 : r->cv;
        uint8_t *neg = col == MH__COL_SIZE ? r->cn2 : r->cn;
        int one = n ? column(&m, (uint32_t)n, v, neg) : (mh__mp_skip(&m, 0) ? -1 : 1);
        if (one < 0)
            return mh__r_fail(r, MH_EFORMAT, off, "events chunk: malformed column %d", col);
        if (col == MH__COL_TIME)
            apply_time(evs, (uint32_t)n, base, v, one);
        else if (col == MH__COL_ADDR)
            a1 = one;
        else if (col == MH__COL_SIZE && apply_addr_size(r, (uint32_t)n, a1, one))
            return mh__r_fail(r, MH_EFORMAT, off, "events chunk: address reference out of range");
        else if (!addr_or_size)
            apply_plain(evs, (uint32_t)n, col, v, one);
    }
    r->nev = (uint32_t)n;
    r->iev = 0;
    return 0;
}
