/* layer_chunk.c - the chunk of the layers analysis (see layers_int.h): the
 * events of the analysed device held from the start of a step until no
 * allocation of it can be saved for its backward any more, then evaluated
 * (layer_calls.c, checkpoint.c) and dropped. Holds the allocated curve's
 * changes, the forward and backward allocations and the scope openings of
 * the chunk. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "layers_int.h"
#include "category_rule.h"
#include "grow.h"

void mh__chunk_free(struct mh__chunk *c)
{
    free(c->delta);
    free(c->recs);
    free(c->marks);
    free(c->groups);
}

/* The pass span event `index` belongs to (events before the first span
 * count as the first span's, as the curve's peaks do). */
static uint32_t current_span(const struct mh__layers *ly)
{
    size_t n;
    mh__lifetimes_passes(ly->lt, &n);
    return n ? (uint32_t)(n - 1) : 0;
}

/* Whether an allocation concerns checkpointing: made in a step's forward
 * (what it saves) or in a step's backward (where it starts). */
static int held_kind(const struct mh__alloc_rec *r)
{
    return (r->alloc_phase == MH_PHASE_FORWARD && !r->before_forward) ||
           (r->alloc_phase == MH_PHASE_BACKWARD && r->alloc_step >= 0);
}

/* Holds a record in the chunk; the record's user[1] says where. */
static int hold(struct mh__layers *ly, struct mh__alloc_rec *r, int32_t layer)
{
    struct mh__chunk *c = &ly->chunk;
    if (c->nrecs >= UINT32_MAX - 1 || MH__GROW(c->recs, c->nrecs, c->caprecs, 1024) < 0)
        return MH_ENOMEM;
    r->user[1] = (uint32_t)c->nrecs + 1;
    c->recs[c->nrecs++] = (struct mh__crec){*r, layer, current_span(ly), 0, 0, 0};
    return 0;
}

/* The end of a record's life, if the chunk holds it (an allocation held by
 * an earlier chunk has another at its place, or none). */
static void ended(struct mh__layers *ly, const struct mh__alloc_rec *r)
{
    struct mh__chunk *c = &ly->chunk;
    size_t i = r->user[1];
    if (i == 0 || i > c->nrecs || c->recs[i - 1].rec.alloc_index != r->alloc_index)
        return;
    c->recs[i - 1].rec = *r;
    c->recs[i - 1].ended = 1;
}

static int add_mark(struct mh__chunk *c, const struct mh_event *ev, uint64_t index)
{
    if (MH__GROW(c->marks, c->nmarks, c->capmarks, 256) < 0)
        return MH_ENOMEM;
    c->marks[c->nmarks++] = (struct mh__cmark){index, ev->str, (uint8_t)ev->aux};
    return 0;
}

int mh__chunk_event(struct mh__layers *ly, const struct mh_model *m, const struct mh_event *ev,
                    struct mh__life_change *ch, uint64_t index)
{
    struct mh__chunk *c = &ly->chunk;
    if (c->nev == 0) {
        c->lo = index;
        c->run0 = ly->run;
        c->span_lo = current_span(ly);
    }
    if (MH__GROW(c->delta, c->nev, c->capev, 4096) < 0)
        return MH_ENOMEM;
    int64_t d = 0;
    int rc = 0;
    (void)m;
    if (ch->began && ch->began->device == ly->device) {
        d = (int64_t)ch->began->size;
        int32_t layer = mh__layers_name_of(ly, ch->began->str, ch->began->stack);
        if (layer < 0)
            return MH_ENOMEM;
        ch->began->user[0] = (uint32_t)layer + 1;
        if (held_kind(ch->began))
            rc = hold(ly, ch->began, layer);
    } else if (ch->ended && ch->ended->device == ly->device) {
        d = -(int64_t)ch->ended->size;
        ended(ly, ch->ended);
    }
    c->delta[c->nev++] = d;
    ly->run += d;
    c->span_hi = current_span(ly);
    if (rc == 0 && ev->kind == MH_EV_SCOPE_ENTER && ev->str &&
        (ev->aux == MH_PHASE_FORWARD || ev->aux == MH_PHASE_BACKWARD))
        rc = add_mark(c, ev, index);
    return rc;
}

int mh__chunk_over(const struct mh__layers *ly, const struct mh_model *m)
{
    const struct mh__chunk *c = &ly->chunk;
    for (size_t i = 0; i < c->nrecs; i++) {
        const struct mh__alloc_rec *r = &c->recs[i].rec;
        if (!c->recs[i].ended && r->alloc_phase == MH_PHASE_FORWARD && !r->before_forward &&
            mh_model_device_step(m, r->device) <= r->alloc_step)
            return 0; /* may still be freed in its step's backward */
    }
    return 1;
}

/* Whether module `path` is the layer `name` or one of its ancestors: what
 * it returned left the layer. */
static int leaves_layer(const char *path, const char *name)
{
    size_t n = path ? strlen(path) : 0;
    return n && strncmp(name, path, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static void mark_outputs(struct mh__layers *ly)
{
    struct mh__chunk *c = &ly->chunk;
    for (size_t i = 0; i < c->nrecs; i++) {
        struct mh__crec *h = &c->recs[i];
        h->output = h->rec.out_str &&
                    leaves_layer(mh_reader_string(ly->r, h->rec.out_str), ly->names[h->layer]);
    }
}

int mh__chunk_close(struct mh__layers *ly, uint64_t index)
{
    struct mh__chunk *c = &ly->chunk;
    int rc = 0;
    if (c->nev > 0) {
        mark_outputs(ly);
        if ((rc = mh__chunk_groups(ly)) == 0 && (rc = mh__chunk_fill_groups(ly)) == 0)
            rc = mh__chunk_summarize(ly);
    }
    c->lo = index;
    c->nev = c->nrecs = c->nmarks = c->ngroups = 0;
    return rc;
}
