/* reader_check.c - the chunks that let a reader check a file's integrity:
 * the dropped chunk (events lost per thread, repeated at every flush) and
 * the trailer (totals of the whole file).
 *
 * The trailer's totals are compared with what was read: its event count with
 * the events decoded, its chunk count and chain (a CRC-32C over every chunk's
 * CRC, in order) with the chunks seen. A chunk lost, repeated or moved
 * between a file's header and its trailer therefore shows as damage instead
 * of a "complete" file with the wrong content. Files written before these
 * keys existed simply lack them and are not checked. */
#include <string.h>

#include "memhist/error.h"
#include "reader_int.h"

/* [total, thread, count, ...]: cumulative counts; never decreasing, and the
 * per-thread counts add up to at most the total. */
int mh__r_dropped(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off)
{
    struct mh__mp m = {p, p + len};
    uint32_t n;
    uint64_t total, tid, count, sum = 0;
    if (mh__mp_array(&m, &n) || n < 1 || n % 2 != 1 || mh__mp_uint(&m, &total))
        return mh__r_fail(r, MH_EFORMAT, off, "dropped chunk: malformed");
    for (uint32_t i = 1; i < n; i += 2) {
        if (mh__mp_uint(&m, &tid) || tid > UINT32_MAX || mh__mp_uint(&m, &count))
            return mh__r_fail(r, MH_EFORMAT, off, "dropped chunk: malformed");
        sum += count;
        if (sum < count || sum > total)
            return mh__r_fail(r, MH_EFORMAT, off,
                              "dropped chunk: per-thread counts exceed the total %llu",
                              (unsigned long long)total);
    }
    if (r->has_drop && total < r->drop_total)
        return mh__r_fail(r, MH_EFORMAT, off,
                          "dropped chunk: the count went down from %llu to %llu",
                          (unsigned long long)r->drop_total, (unsigned long long)total);
    r->has_drop = 1;
    r->drop_total = total;
    r->sum.dropped = total;
    return 0;
}

struct trailer {
    uint64_t events, chunks, chain, dropped;
    int has_events, has_chunks, has_chain;
};

static int parse_trailer(struct mh__mp *m, struct trailer *t)
{
    uint32_t n, kl;
    const char *k;
    memset(t, 0, sizeof *t);
    if (mh__mp_map(m, &n))
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (mh__mp_str(m, &k, &kl))
            return -1;
        if (kl == 7 && !memcmp(k, "dropped", 7) && mh__mp_uint(m, &t->dropped) == 0)
            continue;
        if (kl == 6 && !memcmp(k, "events", 6) && mh__mp_uint(m, &t->events) == 0)
            t->has_events = 1;
        else if (kl == 6 && !memcmp(k, "chunks", 6) && mh__mp_uint(m, &t->chunks) == 0)
            t->has_chunks = 1;
        else if (kl == 5 && !memcmp(k, "chain", 5) && mh__mp_uint(m, &t->chain) == 0)
            t->has_chain = 1;
        else if (mh__mp_skip(m, 0))
            return -1;
    }
    return 0;
}

/* Trailer: a map with "events", "chunks", "chain", "dropped", "end_ns" and
 * "by_kind". */
int mh__r_trailer(struct mh_reader *r, const uint8_t *p, size_t len, uint64_t off)
{
    struct mh__mp m = {p, p + len};
    struct trailer t;
    if (parse_trailer(&m, &t))
        return mh__r_fail(r, MH_EFORMAT, off, "trailer is malformed");
    if (t.has_events && t.events != r->events_decoded)
        return mh__r_fail(r, MH_EFORMAT, off,
                          "the trailer counts %llu events but the file holds %llu "
                          "(chunks lost or repeated)",
                          (unsigned long long)t.events, (unsigned long long)r->events_decoded);
    if (t.has_chunks && t.chunks != r->chunks)
        return mh__r_fail(r, MH_EFORMAT, off,
                          "the trailer counts %llu chunks but the file holds %llu "
                          "(chunks lost or repeated)",
                          (unsigned long long)t.chunks, (unsigned long long)r->chunks);
    if (t.has_chain && t.chain != r->chain)
        return mh__r_fail(r, MH_EFORMAT, off,
                          "the chunks are not in the order they were "
                          "written (the trailer's chain differs)");
    if (r->has_drop && t.dropped < r->drop_total)
        return mh__r_fail(r, MH_EFORMAT, off,
                          "the trailer counts %llu dropped events, fewer than the %llu "
                          "counted before",
                          (unsigned long long)t.dropped, (unsigned long long)r->drop_total);
    r->sum.dropped = t.dropped;
    r->sum.has_trailer = 1;
    return 0;
}
