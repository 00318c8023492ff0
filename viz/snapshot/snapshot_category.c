/* snapshot_category.c - the memory category of every trace entry of the
 * window (see snapshot_int.h), decided in the first pass of snapshot export
 * and held, half a byte per entry, until snapshot_write.c writes them.
 *
 * A category depends on when its allocation is freed, which may be after the
 * window, so this observes the session's whole pass (past the window's end)
 * with mh__livecat (src/analysis/categories.h: the rule `memhist report` uses,
 * memory bounded by the live allocations) and writes each allocation's
 * category into its alloc entry and its free entries, found by their
 * position in the window (snapshot_build.c, the observer before this one,
 * says which entry the event just gave). Every other entry (segment events,
 * OOMs) gets "unknown": the web viewer throws when categories are present and
 * none of them is "unknown". A window with only allocs and frees of known
 * categories lends "unknown" to its first free entry instead (the viewer
 * colours allocations by their alloc entry, so that costs nothing visible);
 * a trace of allocs only gets no categories. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "categories.h"
#include "snapshot_int.h"

static uint64_t slot(const struct mh__catstore *c, uint64_t pos)
{
    return c->ring ? pos % c->ring : pos;
}

unsigned mh__catstore_get(const struct mh__catstore *c, uint64_t pos)
{
    uint64_t k = slot(c, pos);
    if (k >= c->cap)
        return MH__SCAT_NONE;
    return (c->nib[k / 2] >> (k % 2 * 4)) & 15u;
}

static void put(struct mh__catstore *c, uint64_t k, unsigned code)
{
    unsigned shift = k % 2 * 4;
    c->nib[k / 2] = (uint8_t)((c->nib[k / 2] & ~(15u << shift)) | (code << shift));
}

int mh__catstore_add(struct mh__catstore *c, uint64_t pos, unsigned code)
{
    uint64_t k = slot(c, pos);
    if (k >= c->cap) {
        uint64_t ncap = c->cap ? c->cap * 2 : 4096;
        if (c->ring && ncap > c->ring)
            ncap = c->ring;
        uint8_t *p = realloc(c->nib, (size_t)((ncap + 1) / 2));
        if (!p)
            return MH_ENOMEM;
        c->nib = p;
        c->cap = ncap;
    }
    put(c, k, code);
    return 0;
}

void mh__catstore_set(struct mh__catstore *c, uint64_t pos, uint64_t seen, unsigned category)
{
    if (pos >= seen || (c->ring && seen - pos > c->ring))
        return; /* not stored, or already out of the ring */
    uint64_t k = slot(c, pos);
    put(c, k, (mh__catstore_get(c, pos) & MH__SCAT_FREE) | category);
}

static void set_category(struct mh__snapshot *s, int device, uint64_t pos, int category)
{
    if (device < 0 || device >= s->ndev)
        return;
    struct mh__sdev *t = &s->dev[device];
    mh__catstore_set(&t->cats, pos, t->seen, (unsigned)category);
}

/* An allocation's life ended at the current event (or is still going at the
 * end, `here` 0): its alloc entry (tagged with its position + 1) learns the
 * category, and so does the free entry the current event gave. */
static void on_end(struct mh__snapshot *s, const struct mh__livecat_end *end, int here)
{
    if (here)
        set_category(s, s->last_device, s->last_pos, end->category);
    if (end->ended && end->tag)
        set_category(s, end->device, end->tag - 1, end->category);
}

static int on_live(void *user, const struct mh__livecat_end *end)
{
    struct mh__livecat_end e = *end;
    e.ended = 1;
    on_end(user, &e, 0);
    return 0;
}

static int category_begin(void *user, struct mh__session *ses)
{
    struct mh__snapshot *s = user;
    (void)ses;
    mh__livecat_free(s->livecat);
    s->livecat = NULL;
    return mh__livecat_new(&s->livecat);
}

static int category_event(void *user, struct mh__session *ses, const struct mh_event *ev,
                          const struct mh_apply_result *res)
{
    struct mh__snapshot *s = user;
    struct mh__livecat_end end;
    int here = s->have_last && s->last_index == mh__session_index(ses);
    uint64_t tag = here ? s->last_pos + 1 : 0;
    int rc = mh__livecat_observe(s->livecat, mh__session_model(ses), ev, res, tag, &end);
    if (rc == 1)
        on_end(s, &end, here);
    return rc < 0 ? rc : 0;
}

struct tally {
    uint64_t with, unknown;
    int first_free_device;
    uint64_t first_free_pos;
};

/* Counts the written entries' categories (the last max_entries of each
 * device's window) and finds the first free entry. */
static void tally(const struct mh__snapshot *s, struct tally *t)
{
    memset(t, 0, sizeof *t);
    t->first_free_device = -1;
    for (int d = 0; d < s->ndev; d++) {
        const struct mh__sdev *v = &s->dev[d];
        uint64_t cap = v->cats.ring, from = cap && v->seen > cap ? v->seen - cap : 0;
        for (uint64_t pos = v->base + from; pos < v->base + v->seen; pos++) {
            unsigned code = mh__catstore_get(&v->cats, pos), cat = code & 7u;
            if ((code & MH__SCAT_FREE) && t->first_free_device < 0) {
                t->first_free_device = d;
                t->first_free_pos = pos;
            }
            t->with += cat != MH__SCAT_NONE;
            t->unknown += cat == MH__CAT_UNKNOWN;
        }
    }
}

/* "unknown" on every entry that is not an alloc or a free (stored so at
 * once); when that leaves none "unknown", on the first free entry (lent at
 * write time, the store is left as it is); failing that, no categories at
 * all. A window without step markers gets none either. */
void mh__snapshot_settle(struct mh__snapshot *s)
{
    struct tally t;
    s->lend_device = -1;
    if (!s->saw_steps) {
        s->categorized = s->info.categorized = 0;
        return;
    }
    tally(s, &t);
    if (t.with && !t.unknown && t.first_free_device >= 0) {
        const struct mh__sdev *v = &s->dev[t.first_free_device];
        t.with += (mh__catstore_get(&v->cats, t.first_free_pos) & 7u) == MH__SCAT_NONE;
        s->lend_device = t.first_free_device;
        s->lend_pos = t.first_free_pos;
    } else if (t.with && !t.unknown) {
        t.with = 0;
    }
    s->categorized = s->info.categorized = t.with;
}

static int category_end(void *user, struct mh__session *ses)
{
    struct mh__snapshot *s = user;
    (void)ses;
    /* a damaged tail was reported by the session; use what was read */
    int rc = mh__livecat_finish(s->livecat, on_live, s);
    mh__livecat_free(s->livecat);
    s->livecat = NULL;
    if (rc == 0)
        mh__snapshot_settle(s);
    return rc;
}

int mh__snapshot_categorize(struct mh__snapshot *s, struct mh__session *ses)
{
    const struct mh__observer o = {"snapshot-categories", s, category_begin, category_event,
                                  category_end};
    return mh__session_observe(ses, &o);
}
