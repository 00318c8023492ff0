/* replay_match.c - how the what-if replay (sim_replay.c) compares its events
 * with the recorded ones, position by position, and finds the recorded
 * segment a new simulated one takes its address from (see replay_int.h).
 *
 * The two runs advance together while they agree; where one gets ahead, the
 * events of the side ahead wait in a ring until the other reaches them. Runs
 * that drift further apart than the ring holds (other settings, an OOM the
 * recording did not have) compare against a cursor of their own over the
 * recording instead, so the memory stays bounded however far they drift.
 * Segment creations are few: those the oracle has not handed out yet are
 * kept, and one the input has not reached is read ahead by another cursor.
 * Owns its rings and cursors. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "replay_int.h"

static int is_creation(unsigned kind)
{
    return kind == MH_EV_SEGMENT_ALLOC || kind == MH_EV_SEGMENT_MAP;
}

void mh__rmatch_init(struct mh__rmatch *m, const struct mh__sim_source *src, int segments,
                     size_t window)
{
    memset(m, 0, sizeof *m);
    m->src = src;
    m->segments = segments;
    m->window = window ? window : MH__RM_WINDOW;
}

void mh__rmatch_free(struct mh__rmatch *m)
{
    m->src->close(m->cur);
    m->src->close(m->scan);
    free(m->q);
    free(m->segs);
    memset(m, 0, sizeof *m);
}

/* Room for one more element in a ring of `size`-byte elements whose
 * capacity is a power of two; the elements keep their order. */
static int ring_room(void **v, size_t *cap, size_t head, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    char *nv = malloc(nc * size);
    if (!nv)
        return MH_ENOMEM;
    for (size_t i = 0; i < n; i++)
        memcpy(nv + i * size, (char *)*v + ((head + i) & (*cap - 1)) * size, size);
    free(*v);
    *v = nv;
    *cap = nc;
    return 1; /* moved: the head is now 0 */
}

static int q_push(struct mh__rmatch *m, const struct mh__rm_event *e)
{
    int rc = ring_room((void **)&m->q, &m->qcap, m->qhead, m->qn, sizeof *m->q);
    if (rc < 0)
        return rc;
    if (rc > 0)
        m->qhead = 0;
    m->q[(m->qhead + m->qn++) & (m->qcap - 1)] = *e;
    return 0;
}

static struct mh__rm_event q_pop(struct mh__rmatch *m)
{
    struct mh__rm_event e = m->q[m->qhead];
    m->qhead = (m->qhead + 1) & (m->qcap - 1);
    m->qn--;
    return e;
}

static void compare(struct mh__rmatch *m, const struct mh__rm_event *rec,
                    const struct mh__rm_event *sim)
{
    if (rec->kind == sim->kind && rec->size == sim->size &&
        (rec->addr == sim->addr || sim->kind == MH_EV_OOM)) {
        m->matched++;
        m->matched_segment_events += mh__rm_is_segment_kind(sim->kind);
    }
}

static int seg_learn(struct mh__rmatch *m, uint64_t ordinal, const struct mh_event *e);

static struct mh__rm_event compact(const struct mh_event *e)
{
    return (struct mh__rm_event){e->addr, e->size, e->kind};
}

/* The next recorded allocator event (not preexisting) of a cursor: 1, 0
 * at the end, < 0 on an error. */
static int cursor_next(const struct mh__sim_source *src, void *cur, struct mh_event *ev)
{
    int rc;
    while ((rc = src->next(cur, ev)) == 1)
        if (mh__sim_is_allocator_kind(ev->kind) && !mh__rm_preexisting(ev))
            return 1;
    return rc;
}

/* Compares simulated event `sim` with the cursor's next recorded one. */
static int compare_at_cursor(struct mh__rmatch *m, const struct mh__rm_event *sim)
{
    struct mh_event ev;
    int rc = cursor_next(m->src, m->cur, &ev);
    if (rc == 1) {
        struct mh__rm_event rec = compact(&ev);
        compare(m, &rec, sim);
    }
    return rc < 0 ? rc : 0;
}

/* From now on a cursor of its own gives the recorded events at the
 * simulation's position: opened after the first `skip` recorded events
 * (those before the first one queued), then the queued simulated events,
 * if any, are compared with it. */
static int go_cursor(struct mh__rmatch *m, uint64_t skip)
{
    struct mh_event ev;
    int rc = m->src->open(m->src->user, &m->cur);
    for (uint64_t i = 0; rc == 0 && i < skip; i++) {
        int got = cursor_next(m->src, m->cur, &ev);
        rc = got < 0 ? got : 0;
    }
    while (rc == 0 && m->qn) {
        struct mh__rm_event sim = q_pop(m);
        rc = m->queued_sim ? compare_at_cursor(m, &sim) : 0;
    }
    m->qn = m->qhead = 0;
    return rc;
}

int mh__rmatch_recorded(struct mh__rmatch *m, const struct mh_event *e)
{
    struct mh__rm_event rec = compact(e);
    if (m->segments && is_creation(e->kind)) {
        int rc = seg_learn(m, m->seg_input++, e);
        if (rc < 0)
            return rc;
    }
    m->recorded++;
    if (m->cur)
        return 0;
    if (m->qn && m->queued_sim) {
        struct mh__rm_event sim = q_pop(m);
        compare(m, &rec, &sim);
        return 0;
    }
    m->queued_sim = 0;
    if (m->qn >= m->window)
        return go_cursor(m, m->simulated);
    return q_push(m, &rec);
}

int mh__rmatch_simulated(struct mh__rmatch *m, const struct mh_event *e)
{
    struct mh__rm_event sim = compact(e);
    m->simulated++;
    if (m->cur)
        return compare_at_cursor(m, &sim);
    if (m->qn && !m->queued_sim) {
        struct mh__rm_event rec = q_pop(m);
        compare(m, &rec, &sim);
        return 0;
    }
    m->queued_sim = 1;
    int rc = q_push(m, &sim);
    if (rc == 0 && m->qn > m->window)
        rc = go_cursor(m, m->recorded);
    return rc;
}

/* ---- recorded segment creations for the oracle ------------------------------ */
/* Takes creation number `ordinal` (the next one not known yet) unless the
 * oracle has gone past it. */
static int seg_learn(struct mh__rmatch *m, uint64_t ordinal, const struct mh_event *e)
{
    if (ordinal != m->seg_known)
        return 0;
    m->seg_known++;
    if (ordinal < m->seg_first)
        return 0;
    int rc = ring_room((void **)&m->segs, &m->scap, m->shead, m->sn, sizeof *m->segs);
    if (rc < 0)
        return rc;
    if (rc > 0)
        m->shead = 0;
    m->segs[(m->shead + m->sn++) & (m->scap - 1)] =
        (struct mh__rm_segment){e->addr, e->size, e->stream, e->kind};
    return 0;
}

/* Reads ahead of the input until creation `ordinal` is known or the
 * recording has no more. */
static int seg_scan(struct mh__rmatch *m, uint64_t ordinal)
{
    struct mh_event ev;
    int rc = 0;
    if (!m->scan && !m->scan_done)
        rc = m->src->open(m->src->user, &m->scan);
    while (rc == 0 && !m->scan_done && m->seg_known <= ordinal) {
        int got = cursor_next(m->src, m->scan, &ev);
        if (got < 0)
            rc = got;
        else if (got == 0)
            m->scan_done = 1;
        else if (is_creation(ev.kind))
            rc = seg_learn(m, m->seg_scanned++, &ev);
    }
    if (m->scan_done) {
        m->src->close(m->scan);
        m->scan = NULL;
    }
    return rc;
}

void mh__rmatch_forget_segments(struct mh__rmatch *m, uint64_t ordinal)
{
    while (m->sn && m->seg_known - m->sn < ordinal) {
        m->shead = (m->shead + 1) & (m->scap - 1);
        m->sn--;
    }
    if (ordinal > m->seg_first)
        m->seg_first = ordinal;
}

int mh__rmatch_segment(struct mh__rmatch *m, uint64_t ordinal, struct mh__rm_segment *out)
{
    mh__rmatch_forget_segments(m, ordinal);
    int rc = ordinal < m->seg_known ? 0 : seg_scan(m, ordinal);
    if (rc < 0)
        return rc;
    if (ordinal >= m->seg_known || !m->sn || m->seg_known - m->sn != ordinal)
        return 0;
    *out = m->segs[m->shead];
    return 1;
}
