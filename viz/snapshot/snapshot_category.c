/* snapshot_category.c - the memory category of every collected trace entry
 * (see snapshot_int.h), between snapshot_build.c and snapshot_write.c.
 *
 * A category depends on when its allocation is freed, which may be after the
 * window, so this observes the session's whole pass (past the window's end)
 * with mh_livecat (src/analysis/categories.h: the rule `memhist report` uses,
 * memory bounded by the live allocations) and writes each allocation's category
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

static int category_begin(void *user, struct mh_session *ses)
{
    struct mh_snapshot *s = user;
    (void)ses;
    mh__livecat_free(s->livecat);
    s->livecat = NULL;
    return mh__livecat_new(&s->livecat);
}

static int category_event(void *user, struct mh_session *ses, const struct mh_event *ev,
                          const struct mh_apply_result *res)
{
    struct mh_snapshot *s = user;
    struct mh_livecat_end end;
    uint64_t index = mh__session_index(ses);
    int rc = mh__livecat_observe(s->livecat, mh__session_model(ses), ev, res, index, &end);
    if (rc == 1)
        on_end(s, &end, index);
    return rc < 0 ? rc : 0;
}

static void settle(struct mh_snapshot *s);

/* Categories where memhist's own step markers give them a meaning; a
 * snapshot torch wrote (steps only inferred from its annotations, or none)
 * keeps torch's colouring by allocation. */
static void clear(struct mh_snapshot *s)
{
    for (int d = 0; d < s->ndev; d++)
        for (size_t i = 0; i < s->dev[d].len; i++)
            ((struct mh__sentry *)mh__strace_at(&s->dev[d], i))->category = MH__SCAT_NONE;
    s->info.categorized = 0;
}

static int category_end(void *user, struct mh_session *ses)
{
    struct mh_snapshot *s = user;
    (void)ses;
    /* a damaged tail was reported by the session; use what was read */
    int rc = mh__livecat_finish(s->livecat, on_live, s);
    if (rc == 0 && s->saw_steps)
        settle(s);
    else if (rc == 0)
        clear(s);
    return rc;
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

int mh__snapshot_categorize(struct mh_snapshot *s, struct mh_session *ses)
{
    const struct mh_observer o = {"snapshot-categories", s, category_begin, category_event,
                                  category_end};
    return mh__session_observe(ses, &o);
}
