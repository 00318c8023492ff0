/* api.c - the simulator's small accessors: clock, interning (through the
 * writer when there is one, so ids are valid in the output file), counters
 * and queries. Owns nothing. */
#include <string.h>

#include "sim_int.h"

void mh__sim_set_time(struct mh__sim *s, uint64_t time_ns)
{
    if (time_ns > s->now)
        s->now = time_ns;
}

void mh__sim_advance(struct mh__sim *s, uint64_t ns)
{
    s->now += ns;
}

uint64_t mh__sim_time(const struct mh__sim *s)
{
    return s->now;
}

static uint32_t intern_result(struct mh__sim *s, int64_t id)
{
    if (id < 0) {
        if (!s->err)
            s->err = (int)id;
        return 0;
    }
    return (uint32_t)id;
}

uint32_t mh__sim_intern_string(struct mh__sim *s, const char *text)
{
    if (!s->o.writer)
        return ++s->local_ids;
    return intern_result(s, mh_writer_intern_string(s->o.writer, text, strlen(text)));
}

uint32_t mh__sim_intern_frame(struct mh__sim *s, const char *file, const char *func, uint32_t line)
{
    if (!s->o.writer)
        return ++s->local_ids;
    return intern_result(s, mh_writer_intern_frame(s->o.writer, file, func, line));
}

uint32_t mh__sim_intern_stack(struct mh__sim *s, const uint32_t *frames, size_t n)
{
    if (!s->o.writer)
        return ++s->local_ids;
    return intern_result(s, mh_writer_intern_stack(s->o.writer, frames, n));
}

void mh__sim_stats(const struct mh__sim *s, struct mh__sim_stats *out)
{
    *out = s->st;
}

const struct mh_alloc_conf *mh__sim_conf(const struct mh__sim *s)
{
    return &s->o.conf;
}

uint64_t mh__sim_block_size(const struct mh__sim *s, uint64_t addr)
{
    const struct mh__sim_block *b = mh__map_get(&s->live, addr);
    return b && b->allocated ? b->size : 0;
}

uint64_t mh__sim_largest_free(const struct mh__sim *s, uint64_t stream, int small_pool)
{
    uint64_t best = 0;
    for (size_t i = 0; i < s->npools; i++) {
        const struct mh__sim_pool *p = s->pools[i];
        if ((stream != UINT64_MAX && p->stream != stream) || (small_pool >= 0 && p->small != small_pool))
            continue;
        const struct mh__sim_block *m = mh__tree_max(p->free_root);
        if (m && m->size > best)
            best = m->size;
    }
    return best;
}
