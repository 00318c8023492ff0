/* snapshot_category.c - the memory category of every collected trace entry
 * (see snapshot_int.h), between snapshot_build.c and snapshot_write.c.
 *
 * A category depends on when its allocation is freed, which may be after the
 * window, so this replays the whole file once more through a fresh model and
 * mh_livecat (src/analysis/categories.h: the rule `memhist report` uses, memory
 * bounded by the live allocations) and writes each allocation's category
 * into its kept alloc entry and its free entries, found by event position
 * (entries are kept in file order, so a binary search finds them). Every
 * other entry (segment events, OOMs) gets "unknown": the web viewer throws
 * when categories are present and none of them is "unknown". A window with
 * only allocs and frees of known categories lends "unknown" to its first
 * free entry instead (the viewer colours allocations by their alloc entry,
 * so that costs nothing visible); a trace of allocs only gets no
 * categories. Owns nothing after it returns. */
#include <string.h>

#include "memhist/error.h"
#include "categories.h"
#include "snapshot_int.h"

static struct mh__sentry *find_entry(struct mh_snapshot *s, int device, uint64_t index)
{
    if (device < 0 || device >= s->ndev)
        return NULL;
    const struct mh__strace *t = &s->dev[device];
    size_t lo = 0, hi = t->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mh__strace_at(t, mid)->index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->len || mh__strace_at(t, lo)->index != index)
        return NULL;
    return (struct mh__sentry *)mh__strace_at(t, lo);
}

static void set_category(struct mh_snapshot *s, int device, uint64_t index, int category)
{
    struct mh__sentry *e = find_entry(s, device, index);
    if (e)
        e->category = (uint8_t)category;
}

/* An allocation's life ended at event `index` (or is still going at the
 * end): its alloc entry (tagged with the alloc's position) learns the
 * category, and so does the free entry at `index`. */
static void on_end(struct mh_snapshot *s, const struct mh_livecat_end *end, uint64_t index)
{
    if (index != UINT64_MAX)
        set_category(s, end->device, index, end->category);
    if (end->ended)
        set_category(s, end->device, end->tag, end->category);
}

static int on_live(void *user, const struct mh_livecat_end *end)
{
    struct mh_livecat_end e = *end;
    e.ended = 1;
    on_end(user, &e, UINT64_MAX);
    return 0;
}

static int replay(struct mh_snapshot *s, struct mh_model *m, struct mh_livecat *lc)
{
    struct mh_event ev;
    struct mh_apply_result res;
    struct mh_livecat_end end;
    uint64_t index = 0;
    int rc;
    for (; (rc = mh_reader_next(s->reader, &ev)) == 1; index++) {
        memset(&res, 0, sizeof res);
        if ((rc = mh_model_apply(m, &ev, &res)) < 0)
            return rc;
        rc = mh__livecat_observe(lc, m, &ev, &res, index, &end);
        if (rc < 0)
            return rc;
        if (rc == 1)
            on_end(s, &end, index);
    }
    /* a damaged tail was reported by the first replay; use what was read */
    mh_model_finish(m);
    return mh__livecat_finish(lc, on_live, s);
}

static int is_alloc_or_free(unsigned kind)
{
    return kind == MH_EV_ALLOC || kind == MH_EV_FREE_REQUESTED || kind == MH_EV_FREE_COMPLETED;
}

/* "unknown" on every entry that is not an alloc or a free; when that
 * leaves none "unknown", on the first free entry; failing that, no
 * categories at all. */
static void settle(struct mh_snapshot *s)
{
    uint64_t with = 0, unknown = 0;
    struct mh__sentry *first_free = NULL;
    for (int d = 0; d < s->ndev; d++)
        for (size_t i = 0; i < s->dev[d].len; i++) {
            struct mh__sentry *e = (struct mh__sentry *)mh__strace_at(&s->dev[d], i);
            if (!is_alloc_or_free(e->kind))
                e->category = MH_CAT_UNKNOWN;
            else if (e->kind != MH_EV_ALLOC && !first_free)
                first_free = e;
            with += e->category != MH__SCAT_NONE;
            unknown += e->category == MH_CAT_UNKNOWN;
        }
    if (with && !unknown && first_free) {
        with += first_free->category == MH__SCAT_NONE;
        first_free->category = MH_CAT_UNKNOWN;
    } else if (with && !unknown) {
        for (int d = 0; d < s->ndev; d++)
            for (size_t i = 0; i < s->dev[d].len; i++)
                ((struct mh__sentry *)mh__strace_at(&s->dev[d], i))->category = MH__SCAT_NONE;
        with = 0;
    }
    s->info.categorized = with;
}

int mh__snapshot_categorize(struct mh_snapshot *s)
{
    if (mh_reader_rewind(s->reader) < 0)
        return 0; /* a stream read once: the snapshot goes without categories */
    struct mh_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.conf = s->conf;
    struct mh_model *m = NULL;
    struct mh_livecat *lc = NULL;
    int rc = mh_model_new(&mo, &m);
    if (rc == 0)
        rc = mh__livecat_new(&lc);
    if (rc == 0)
        rc = replay(s, m, lc);
    mh__livecat_free(lc);
    mh_model_free(m);
    if (rc == 0)
        settle(s);
    return rc;
}
