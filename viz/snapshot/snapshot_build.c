/* snapshot_build.c - first phase of snapshot export: replays a .memhist file
 * through the model, stops at the end of the window, and keeps the window's
 * allocator events (per device, the last max_entries of them, like torch's
 * ring buffer) and step annotations for snapshot_write.c. Each kept entry
 * remembers its event's position in the file, so snapshot_category.c can
 * give it its allocation's category afterwards. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_int.h"

static int is_allocator_kind(unsigned kind)
{
    return kind <= MH_EV_SNAPSHOT;
}

static int is_note_kind(const struct mh_snapshot *s, unsigned kind)
{
    return kind == MH_EV_STEP_BEGIN || kind == MH_EV_STEP_END ||
           (s->export_ranges && (kind == MH_EV_RANGE_BEGIN || kind == MH_EV_RANGE_END));
}

const struct mh__sentry *mh__strace_at(const struct mh__strace *t, size_t i)
{
    size_t k = t->head + i;
    return &t->e[k >= t->cap ? k - t->cap : k];
}

/* Adds an entry; with cap > 0 the trace is a ring keeping the last `cap`. */
static int strace_add(struct mh__strace *t, const struct mh__sentry *e, uint64_t cap)
{
    t->seen++;
    if (cap && t->len == cap) {
        t->e[t->head] = *e;
        t->head = t->head + 1 == cap ? 0 : t->head + 1;
        return 0;
    }
    if (t->len == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        if (cap && ncap > cap)
            ncap = cap;
        struct mh__sentry *p = realloc(t->e, ncap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        t->e = p;
        t->cap = ncap;
    }
    t->e[t->len++] = *e;
    return 0;
}

static int device_trace(struct mh_snapshot *s, int device, struct mh__strace **out)
{
    if (device < 0 || device > INT16_MAX)
        return MH_EINVAL;
    if (device >= s->ndev) {
        int n = device + 1;
        struct mh__strace *p = realloc(s->dev, (size_t)n * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        memset(p + s->ndev, 0, (size_t)(n - s->ndev) * sizeof *p);
        s->dev = p;
        s->ndev = n;
    }
    *out = &s->dev[device];
    return 0;
}

static void to_entry(const struct mh_event *ev, int64_t step, int phase, struct mh__sentry *e)
{
    e->index = 0;
    e->category = MH__SCAT_NONE;
    e->time_ns = ev->time_ns;
    e->addr = ev->addr;
    e->size = ev->size;
    e->stream = ev->stream;
    e->stack = ev->stack;
    e->str = ev->str;
    e->str2 = ev->str2;
    e->pool[0] = ev->pool[0];
    e->pool[1] = ev->pool[1];
    e->step = step;
    e->device = ev->device;
    e->kind = ev->kind;
    e->phase = (uint8_t)phase;
}

/* Keeps one applied event of the window. */
static int collect(struct mh_snapshot *s, const struct mh_event *ev, int64_t step, uint64_t index)
{
    struct mh__sentry e;
    to_entry(ev, step, mh_model_current_phase(s->model), &e);
    e.index = index;
    if (is_note_kind(s, ev->kind)) {
        if (e.device < 0)
            e.device = 0;
        if (s->opts.only_device && e.device != s->opts.device)
            e.device = (int16_t)s->opts.device;
        return strace_add(&s->notes, &e, s->opts.max_entries);
    }
    if (!is_allocator_kind(ev->kind) || ev->device < 0)
        return 0;
    if (s->opts.only_device && ev->device != s->opts.device)
        return 0;
    struct mh__strace *t;
    int rc = device_trace(s, ev->device, &t);
    return rc ? rc : strace_add(t, &e, s->opts.max_entries);
}

/* Step an event belongs to, as the model will count it (see steps.c):
 * markers carry their number; after STEP_END(N) the next event opens N+1. */
struct step_track {
    int after_end;
    int64_t end_step;
};

static int64_t event_step(const struct mh_snapshot *s, struct step_track *st,
                          const struct mh_event *ev)
{
    if (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END)
        return (int64_t)ev->aux;
    if (st->after_end && ev->time_ns)
        return st->end_step + 1;
    return mh_model_current_step(s->model);
}

static int windowed_kind(unsigned kind)
{
    return is_allocator_kind(kind) || kind == MH_EV_STEP_BEGIN || kind == MH_EV_STEP_END ||
           kind == MH_EV_PHASE;
}

/* The replay loop, from the already read first event (rc = what reading it
 * returned). Returns 0 at the end of the window or file. */
static int replay(struct mh_snapshot *s, struct mh_event ev, int rc)
{
    struct step_track st = {0, 0};
    uint64_t t0 = 0, index = 0;
    int have_t0 = 0;
    int entered = s->opts.in_window == NULL;
    for (; rc == 1; index++, rc = mh_reader_next(s->reader, &ev)) {
        if (!have_t0 && ev.time_ns) {
            t0 = ev.time_ns;
            have_t0 = 1;
        }
        int64_t step = event_step(s, &st, &ev);
        /* other kinds belong to the window once it has started */
        int inside = entered;
        if (windowed_kind(ev.kind))
            inside =
                !s->opts.in_window || s->opts.in_window(s->opts.window_user, t0, ev.time_ns, step);
        if (!inside && entered)
            return 0; /* first event past the window: the state is final */
        struct mh_apply_result res;
        if ((rc = mh_model_apply(s->model, &ev, &res)) < 0)
            return rc;
        if (ev.kind == MH_EV_STEP_END) {
            st.after_end = 1;
            st.end_step = (int64_t)ev.aux;
        } else if (ev.kind == MH_EV_STEP_BEGIN || (st.after_end && ev.time_ns)) {
            st.after_end = 0;
        }
        if (!inside) {
            s->info.before_window += is_allocator_kind(ev.kind);
            continue;
        }
        entered |= windowed_kind(ev.kind);
        s->saw_steps |= (ev.kind == MH_EV_STEP_BEGIN || ev.kind == MH_EV_STEP_END) &&
                        !(ev.flags & MH_EVF_DERIVED);
        if (ev.flags & MH_EVF_PREEXISTING)
            continue; /* state from before the trace (imported): segments show it */
        if (ev.flags & MH_EVF_DERIVED) {
            s->derived_steps = 1; /* inferred from the ranges, which are exported */
            continue;
        }
        if (res.anomaly) {
            s->info.anomalies++;
            continue;
        }
        if ((rc = collect(s, &ev, step, index)) < 0)
            return rc;
    }
    if (rc < 0)
        s->info.read_error = rc;
    return 0;
}

static void set_conf(struct mh_snapshot *s)
{
    const char *text = mh_reader_meta(s->reader, "alloc_conf");
    s->conf_text = text ? text : "";
    memset(&s->conf, 0, sizeof s->conf);
    if (text && mh_alloc_conf_parse(text, &s->conf, NULL, 0) != 0)
        memset(&s->conf, 0, sizeof s->conf);
    const char *source = mh_reader_meta(s->reader, "source");
    s->export_ranges = source && strcmp(source, "imported") == 0;
}

/* Totals for the info struct once the window is collected. */
static void summarize(struct mh_snapshot *s)
{
    struct mh_file_summary sum;
    mh_reader_summary(s->reader, &sum);
    s->info.recorder_dropped = sum.dropped;
    uint64_t kept = 0, seen = 0;
    for (int d = 0; d < s->ndev; d++) {
        kept += s->dev[d].len;
        seen += s->dev[d].seen;
    }
    s->info.entries = kept;
    s->info.capped = seen - kept + (s->notes.seen - s->notes.len);
    s->info.annotations = s->notes.len;
    s->info.overflowed = sum.dropped > 0 || s->info.capped > 0 || s->info.before_window > 0 ||
                         mh_reader_meta(s->reader, "trace_overflowed") != NULL;
}

/* Reads on past the window so the trailer's dropped count is known. */
static void drain(struct mh_snapshot *s)
{
    struct mh_event ev;
    while (mh_reader_next(s->reader, &ev) == 1) {
    }
}

int mh__snapshot_build(struct mh_reader *r, const struct mh_snapshot_opts *opts,
                       struct mh_snapshot **out)
{
    *out = NULL;
    struct mh_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return MH_ENOMEM;
    s->reader = r;
    if (opts)
        s->opts = *opts;
    /* the settings are metadata that precede the first event in the file */
    struct mh_event first;
    memset(&first, 0, sizeof first);
    int got = mh_reader_next(r, &first);
    set_conf(s);
    struct mh_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.conf = s->conf;
    int rc = mh_model_new(&mo, &s->model);
    if (rc == 0)
        rc = replay(s, first, got);
    if (rc < 0) {
        mh__snapshot_free(s);
        return rc;
    }
    mh_model_finish(s->model);
    if (!s->info.read_error)
        drain(s);
    summarize(s);
    /* colours by category where memhist's own step markers give the
     * categories a meaning; a snapshot torch wrote (steps only inferred from
     * its annotations, or none) keeps torch's colouring by allocation */
    int colour = !s->opts.no_categories && s->saw_steps;
    if (colour && (rc = mh__snapshot_categorize(s)) < 0) {
        mh__snapshot_free(s);
        return rc;
    }
    s->info.estimate_bytes = mh__snapshot_estimate(s);
    *out = s;
    return 0;
}

void mh__snapshot_info(const struct mh_snapshot *s, struct mh_snapshot_info *out)
{
    *out = s->info;
}

void mh__snapshot_free(struct mh_snapshot *s)
{
    if (!s)
        return;
    for (int d = 0; d < s->ndev; d++)
        free(s->dev[d].e);
    free(s->dev);
    free(s->notes.e);
    mh_model_free(s->model);
    free(s);
}
