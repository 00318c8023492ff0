/* snapshot_build.c - first phase of snapshot export: an observer of one
 * replay session pass (src/analysis/session.h) that applies the events to
 * the snapshot's own model up to the end of the window, and keeps the
 * window's allocator events (per device, the last max_entries of them, like
 * torch's ring buffer) and step annotations for snapshot_write.c. Each kept
 * entry remembers its event's position in the file, so snapshot_category.c,
 * an observer of the same pass, can give it its allocation's category. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "categories.h"
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
static int64_t event_step(const struct mh_snapshot *s, struct mh__step_track *st,
                          const struct mh_event *ev)
{
    if (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END)
        return (int64_t)ev->aux;
    if (st->after_end && ev->time_ns)
        return st->end_step + 1;
    return mh_model_device_step(s->model, ev->device);
}

static int windowed_kind(unsigned kind)
{
    return is_allocator_kind(kind) || kind == MH_EV_STEP_BEGIN || kind == MH_EV_STEP_END ||
           kind == MH_EV_PHASE;
}

static void set_conf(struct mh_snapshot *s, struct mh_session *ses)
{
    const char *text = mh_reader_meta(s->reader, "alloc_conf");
    s->conf_text = text ? text : "";
    s->conf = *mh__session_conf(ses);
    const char *source = mh_reader_meta(s->reader, "source");
    s->export_ranges = source && strcmp(source, "imported") == 0;
}

/* The settings are known once the pass has started. */
static int build_begin(void *user, struct mh_session *ses)
{
    struct mh_snapshot *s = user;
    struct mh_model_opts mo;
    set_conf(s, ses);
    memset(&mo, 0, sizeof mo);
    mo.conf = s->conf;
    mh_model_free(s->model);
    memset(&s->build, 0, sizeof s->build);
    return mh_model_new(&mo, &s->model);
}

/* One event of the session's pass, applied to the snapshot's own model
 * until the window ends (the model then holds the state the segments show;
 * the session reads on for the categories and the trailer). */
static int build_event(void *user, struct mh_session *ses, const struct mh_event *ev,
                       const struct mh_apply_result *applied)
{
    struct mh_snapshot *s = user;
    struct mh__build *b = &s->build;
    uint64_t index = mh__session_index(ses);
    (void)applied;
    if (b->done)
        return 0;
    if (!b->have_t0 && ev->time_ns) {
        b->t0 = ev->time_ns;
        b->have_t0 = 1;
    }
    int64_t step = event_step(s, &b->st, ev);
    /* other kinds belong to the window once it has started */
    int inside = b->entered;
    if (windowed_kind(ev->kind))
        inside = !s->opts.in_window ||
                 s->opts.in_window(s->opts.window_user, b->t0, ev->time_ns, step);
    if (!inside && b->entered) {
        b->done = 1; /* first event past the window: the state is final */
        return 0;
    }
    struct mh_apply_result res;
    int rc = mh_model_apply(s->model, ev, &res);
    if (rc < 0)
        return rc;
    if (ev->kind == MH_EV_STEP_END && !(ev->flags & MH_EVF_DEVICE_STEP)) {
        b->st.after_end = 1; /* a device's own step end: the model counts it at once */
        b->st.end_step = (int64_t)ev->aux;
    } else if (ev->kind == MH_EV_STEP_BEGIN || (b->st.after_end && ev->time_ns)) {
        b->st.after_end = 0;
    }
    if (!inside) {
        s->info.before_window += is_allocator_kind(ev->kind);
        return 0;
    }
    b->entered |= windowed_kind(ev->kind);
    s->saw_steps |= (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END) &&
                    !(ev->flags & MH_EVF_DERIVED);
    if (ev->flags & MH_EVF_PREEXISTING)
        return 0; /* state from before the trace (imported): segments show it */
    if (ev->flags & MH_EVF_DERIVED) {
        s->derived_steps = 1; /* inferred from the ranges, which are exported */
        return 0;
    }
    if (res.anomaly) {
        s->info.anomalies++;
        return 0;
    }
    return collect(s, ev, step, index);
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

int mh__snapshot_build(struct mh_session *ses, const struct mh_snapshot_opts *opts,
                       struct mh_snapshot **out)
{
    *out = NULL;
    struct mh_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return MH_ENOMEM;
    s->reader = mh__session_reader(ses);
    if (opts)
        s->opts = *opts;
    const struct mh_observer build = {"snapshot", s, build_begin, build_event, NULL};
    int rc = mh__session_observe(ses, &build);
    if (rc == 0 && !s->opts.no_categories)
        rc = mh__snapshot_categorize(s, ses);
    if (rc == 0)
        rc = mh__session_run(ses, 0);
    mh__session_forget(ses);
    if (rc < 0) {
        mh__snapshot_free(s);
        return rc;
    }
    s->info.read_error = mh__session_read_error(ses);
    if (!s->model)
        rc = build_begin(s, ses); /* no events: an empty model */
    if (rc < 0) {
        mh__snapshot_free(s);
        return rc;
    }
    mh_model_finish(s->model);
    summarize(s);
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
    mh__livecat_free(s->livecat);
    free(s);
}
