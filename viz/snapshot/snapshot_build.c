/* snapshot_build.c - the replays of snapshot export: an observer of a
 * session pass (src/analysis/session.h) that follows the window through the
 * session's model and hands each allocator event of the window on as a
 * trace entry. One observer, three uses, so every pass makes the same
 * decisions event for event:
 *
 *   count   the first pass (mh__snapshot_build): counts each device's
 *           entries, sizes them (snapshot_estimate.c), keeps the step
 *           annotations, and, with snapshot_category.c observing the same
 *           pass to the end of the file, gives each entry its category by
 *           its position in the window;
 *   narrow  (mh__snapshot_narrow) the same count for a window chosen after
 *           a first pass over the whole run, whose categories it reuses:
 *           an entry of the window is the entry of the whole run at the
 *           same place, its position shifted by the entries before;
 *   write   (mh__snapshot_replay_device, from snapshot_write.c) one pass per
 *           device that writes that device's entries (the last max_entries
 *           of them, like torch's ring buffer) and stops after the last;
 *           a window of few entries (MH__KEEP_ENTRIES) was kept by the first
 *           pass and is written from there instead.
 *
 * The pickle's segments come before its trace, so entries are not kept; the
 * segments are the model's state where the window ends: the session's where
 * the pass stops there (a narrowing pass, mh__session_stop_before; the first
 * pass when the window reaches the end of the file), else that of a model
 * the first pass applies the events to up to the window's end. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "categories.h"
#include "snapshot_int.h"

enum { PASS_COUNT, PASS_NARROW, PASS_WRITE };

static int is_allocator_kind(unsigned kind)
{
    return kind <= MH_EV_SNAPSHOT;
}

static int is_note_kind(const struct mh__snapshot *s, unsigned kind)
{
    return kind == MH_EV_STEP_BEGIN || kind == MH_EV_STEP_END ||
           (s->export_ranges && (kind == MH_EV_RANGE_BEGIN || kind == MH_EV_RANGE_END));
}

const struct mh__sentry *mh__sring_at(const struct mh__sring *t, size_t i)
{
    size_t k = t->head + i;
    return &t->e[k >= t->cap ? k - t->cap : k];
}

/* Adds an annotation; with cap > 0 the list is a ring keeping the last `cap`. */
static int sring_add(struct mh__sring *t, const struct mh__sentry *e, uint64_t cap)
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

static int device_trace(struct mh__snapshot *s, int device, struct mh__sdev **out)
{
    if (device < 0 || device > INT16_MAX)
        return MH_EINVAL;
    if (device >= s->ndev) {
        int n = device + 1;
        struct mh__sdev *p = realloc(s->dev, (size_t)n * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        memset(p + s->ndev, 0, (size_t)(n - s->ndev) * sizeof *p);
        for (int d = s->ndev; d < n; d++)
            p[d].cats.ring = s->opts.max_entries;
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

static unsigned first_code(unsigned kind)
{
    if (kind == MH_EV_ALLOC)
        return MH__SCAT_NONE;
    if (kind == MH_EV_FREE_REQUESTED || kind == MH_EV_FREE_COMPLETED)
        return MH__SCAT_NONE | MH__SCAT_FREE;
    return MH__CAT_UNKNOWN; /* when categories are written at all */
}

static void drop_kept(struct mh__snapshot *s)
{
    for (int d = 0; d < s->ndev; d++) {
        free(s->dev[d].kept.e);
        memset(&s->dev[d].kept, 0, sizeof s->dev[d].kept);
    }
    s->keep_off = 1;
}

/* The first pass keeps a small window's entries, so that writing needs no
 * replay; past MH__KEEP_ENTRIES they are dropped. */
static int keep(struct mh__snapshot *s, struct mh__sdev *t, const struct mh__sentry *e)
{
    size_t held = t->kept.len;
    int rc = sring_add(&t->kept, e, s->opts.max_entries);
    s->kept_total += t->kept.len - held;
    if (rc == MH_ENOMEM || s->kept_total > MH__KEEP_ENTRIES)
        drop_kept(s);
    return 0;
}

/* Counting passes: one more entry of device `t`, sized (and, in the first
 * pass, stored for its category). */
static int count_entry(struct mh__snapshot *s, struct mh__sdev *t, const struct mh__sentry *e)
{
    if (s->pass == PASS_NARROW) { /* sized by the first pass already */
        t->seen++;
        return 0;
    }
    int rc = mh__catstore_add(&t->cats, t->seen, first_code(e->kind));
    if (rc == 0)
        rc = mh__snapshot_count(s, e);
    if (rc == 0 && !s->keep_off)
        rc = keep(s, t, e);
    if (rc < 0)
        return rc;
    s->last_index = e->index;
    s->last_pos = t->seen++;
    s->last_device = e->device;
    s->have_last = 1;
    return 0;
}

/* Pass that writes: the entries of one device, from write_from on. */
static void write_entry(struct mh__snapshot *s, struct mh__sentry *e)
{
    uint64_t pos = s->write_pos++;
    if (pos < s->write_from)
        return;
    const struct mh__sdev *t = &s->dev[e->device];
    unsigned code = mh__catstore_get(&t->cats, t->base + pos) & 7u;
    if (e->device == s->lend_device && t->base + pos == s->lend_pos)
        code = MH__CAT_UNKNOWN; /* the window's only "unknown" (snapshot_category.c) */
    e->category = (uint8_t)(s->categorized ? code : MH__SCAT_NONE);
    mh__snapshot_write_entry(s, e);
}

/* The device an applied allocator event gives an entry to, or -1 (a
 * device filtered out, an event the model rejected, state from before the
 * trace, ...), whether or not it lies in the window. */
static int entry_device(const struct mh__snapshot *s, const struct mh_event *ev,
                        const struct mh_apply_result *res)
{
    if (!is_allocator_kind(ev->kind) || ev->device < 0 || res->anomaly ||
        (ev->flags & (MH_EVF_PREEXISTING | MH_EVF_DERIVED)))
        return -1;
    if (s->opts.only_device && ev->device != s->opts.device)
        return -1;
    return ev->device;
}

/* One applied event of the window. */
static int collect(struct mh__snapshot *s, const struct mh_event *ev, int64_t step, uint64_t index,
                   int device)
{
    struct mh__sentry e;
    to_entry(ev, step, mh_model_current_phase(mh__session_model(s->ses)), &e);
    e.index = index;
    if (is_note_kind(s, ev->kind)) {
        if (s->pass == PASS_WRITE)
            return 0; /* kept by the counting pass */
        if (e.device < 0)
            e.device = 0;
        if (s->opts.only_device && e.device != s->opts.device)
            e.device = (int16_t)s->opts.device;
        return sring_add(&s->notes, &e, s->opts.max_entries);
    }
    if (device < 0)
        return 0;
    if (s->pass == PASS_WRITE) {
        if (device == s->write_device)
            write_entry(s, &e);
        return 0;
    }
    struct mh__sdev *t;
    int rc = device_trace(s, device, &t);
    return rc ? rc : count_entry(s, t, &e);
}

/* Step an event belongs to, as the model counts it (see steps.c): markers
 * carry their number; after STEP_END(N) the next event opens N+1. Other
 * events do not move the model's step, so it is the same before and after
 * the model applied them. */
static int64_t event_step(const struct mh_model *m, const struct mh__step_track *st,
                          const struct mh_event *ev)
{
    if (ev->kind == MH_EV_STEP_BEGIN || ev->kind == MH_EV_STEP_END)
        return (int64_t)ev->aux;
    if (st->after_end && ev->time_ns)
        return st->end_step + 1;
    return mh_model_device_step(m, ev->device);
}

static int windowed_kind(unsigned kind)
{
    return is_allocator_kind(kind) || kind == MH_EV_STEP_BEGIN || kind == MH_EV_STEP_END ||
           kind == MH_EV_PHASE;
}

static void set_conf(struct mh__snapshot *s, struct mh__session *ses)
{
    const char *text = mh_reader_meta(s->reader, "alloc_conf");
    s->conf_text = text ? text : "";
    s->conf = *mh__session_conf(ses);
    const char *source = mh_reader_meta(s->reader, "source");
    s->export_ranges = source && strcmp(source, "imported") == 0;
}

/* A first pass over an explicit window replays it into a model of its own
 * too, which stops where the window ends while the session reads on. */
static int build_begin(void *user, struct mh__session *ses)
{
    struct mh__snapshot *s = user;
    set_conf(s, ses);
    memset(&s->build, 0, sizeof s->build);
    s->have_last = 0;
    mh_model_free(s->window_model);
    s->window_model = NULL;
    if (s->pass != PASS_COUNT || !s->opts.in_window)
        return 0;
    struct mh_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.conf = s->conf;
    return mh_model_new(&mo, &s->window_model);
}

static void track_steps(struct mh__step_track *st, const struct mh_event *ev)
{
    if (ev->kind == MH_EV_STEP_END && !(ev->flags & MH_EVF_DEVICE_STEP)) {
        st->after_end = 1; /* a device's own step end: the model counts it at once */
        st->end_step = (int64_t)ev->aux;
    } else if (ev->kind == MH_EV_STEP_BEGIN || (st->after_end && ev->time_ns)) {
        st->after_end = 0;
    }
}

/* An event before the window (or after it, in the first pass). */
static void outside(struct mh__snapshot *s, const struct mh_event *ev, int device)
{
    if (s->pass == PASS_WRITE)
        return;
    s->info.before_window += is_allocator_kind(ev->kind);
    if (s->pass == PASS_NARROW && device >= 0 && device < s->ndev)
        s->dev[device].base++; /* an entry of the whole run before the window */
}

/* One event of the session's pass. The window is the run of events from
 * the first one in it to the first windowed one past it; the first pass
 * reads on to the end for the categories and the trailer, the others stop
 * there. */
static int build_event(void *user, struct mh__session *ses, const struct mh_event *ev,
                       const struct mh_apply_result *res)
{
    struct mh__snapshot *s = user;
    struct mh__build *b = &s->build;
    uint64_t index = mh__session_index(ses);
    if (b->done)
        return s->pass != PASS_COUNT;
    if (!b->have_t0 && ev->time_ns) {
        b->t0 = ev->time_ns;
        b->have_t0 = 1;
    }
    int64_t step = event_step(mh__session_model(ses), &b->st, ev);
    /* other kinds belong to the window once it has started */
    int inside = b->entered;
    if (windowed_kind(ev->kind))
        inside = !s->opts.in_window ||
                 s->opts.in_window(s->opts.window_user, b->t0, ev->time_ns, step);
    if (!inside && b->entered) {
        b->done = 1; /* first event past the window: the state before it is final */
        b->end_index = index;
        return s->pass != PASS_COUNT;
    }
    if (s->window_model) {
        int rc = mh_model_apply(s->window_model, ev, NULL);
        if (rc < 0)
            return rc;
    }
    track_steps(&b->st, ev);
    int device = entry_device(s, ev, res);
    if (!inside) {
        outside(s, ev, device);
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
    if (res->anomaly) {
        s->info.anomalies += s->pass != PASS_WRITE;
        return 0;
    }
    int rc = collect(s, ev, step, index, device);
    if (rc == 0 && s->pass == PASS_WRITE && s->write_pos == s->dev[s->write_device].seen)
        rc = 1; /* the device's last entry is written */
    return rc;
}

/* Totals for the info struct once the window is counted. */
static void summarize(struct mh__snapshot *s)
{
    struct mh_file_summary sum;
    mh_reader_summary(s->reader, &sum);
    s->info.recorder_dropped = sum.dropped;
    uint64_t kept = 0, seen = 0;
    for (int d = 0; d < s->ndev; d++) {
        uint64_t n = s->dev[d].seen, cap = s->opts.max_entries;
        kept += cap && n > cap ? cap : n;
        seen += n;
    }
    s->info.entries = kept;
    s->info.capped = seen - kept + (s->notes.seen - s->notes.len);
    s->info.annotations = s->notes.len;
    s->info.overflowed = sum.dropped > 0 || s->info.capped > 0 || s->info.before_window > 0 ||
                         mh_reader_meta(s->reader, "trace_overflowed") != NULL;
}

/* The default window's candidates, from the session's model of the whole
 * file: the first OOM of the run and the highest allocated peak. */
static void find_focus(struct mh__snapshot *s, const struct mh_model *m)
{
    struct mh__focus *f = &s->focus;
    memset(f, 0, sizeof *f);
    if (!m)
        return;
    for (size_t i = 0; i < mh_model_oom_count(m); i++) {
        struct mh_oom_info o;
        if (mh_model_oom(m, i, &o) != 0 || (s->opts.only_device && o.device != s->opts.device))
            continue;
        if (!f->have_oom || o.event_index < f->oom.event_index) {
            f->oom = o;
            f->have_oom = 1;
        }
    }
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        int d = mh_model_device_at(m, i);
        struct mh_peak p;
        if (d < 0 || (s->opts.only_device && d != s->opts.device) ||
            mh_model_peak_allocated(m, d, &p) != 0 || p.value == 0)
            continue;
        if (!f->have_peak || p.value > f->peak.value) {
            f->peak = p;
            f->peak_device = d;
            f->have_peak = 1;
        }
    }
}

/* Before the session applies an event (passes after the first): whether it
 * is the first past the window, where the pass stops with the model in the
 * state the segments show. The same test build_event makes. */
static int window_ends(void *user, struct mh__session *ses, const struct mh_event *ev)
{
    struct mh__snapshot *s = user;
    struct mh__build *b = &s->build;
    if (!b->entered || !windowed_kind(ev->kind))
        return 0;
    uint64_t t0 = b->have_t0 ? b->t0 : ev->time_ns;
    int64_t step = event_step(mh__session_model(ses), &b->st, ev);
    if (s->opts.in_window(s->opts.window_user, t0, ev->time_ns, step))
        return 0;
    b->done = 1;
    b->end_index = mh__session_index(ses);
    return 1;
}

static const struct mh__observer build_observer = {"snapshot", NULL, build_begin, build_event,
                                                   NULL};

/* One pass of the session with the observer in `pass` mode (and the
 * categories' observer in the first). */
static int replay(struct mh__snapshot *s, int pass)
{
    struct mh__observer o = build_observer;
    o.user = s;
    s->pass = pass;
    mh__session_forget(s->ses);
    int rc = mh__session_observe(s->ses, &o);
    if (rc == 0 && pass == PASS_COUNT && !s->opts.no_categories)
        rc = mh__snapshot_categorize(s, s->ses);
    if (rc == 0 && pass != PASS_COUNT && s->opts.in_window)
        mh__session_stop_before(s->ses, window_ends, s);
    if (rc == 0)
        rc = mh__session_run(s->ses, 0);
    mh__session_forget(s->ses);
    return rc;
}

/* The state where the window ends: the whole pass's model, or the events
 * before the first one past the window replayed again. */
static int final_state(struct mh__snapshot *s)
{
    if (!s->build.done && s->pass == PASS_NARROW)
        return 0; /* the first pass's, which ended where this window does */
    mh_model_free(s->model);
    s->model = NULL;
    if (s->window_model) { /* the first pass read on, for the categories */
        s->model = s->window_model;
        s->window_model = NULL;
        mh_model_finish(s->model);
        return 0;
    }
    s->model = mh__session_take_model(s->ses); /* it stopped where the window ends */
    return s->model ? 0 : MH_ENOMEM;
}

/* After a counting pass: the segments' state, the totals, the estimate
 * (a narrowing pass keeps the one its window was chosen by). */
static int finish_count(struct mh__snapshot *s)
{
    s->info.read_error = mh__session_read_error(s->ses);
    s->t0 = s->build.t0;
    if (s->pass == PASS_COUNT)
        find_focus(s, mh__session_model(s->ses));
    int rc = final_state(s);
    if (rc < 0)
        return rc;
    summarize(s);
    if (s->pass == PASS_COUNT)
        s->info.estimate_bytes = mh__snapshot_estimate(s);
    return 0;
}

int mh__snapshot_build(struct mh__session *ses, const struct mh__snapshot_opts *opts,
                       struct mh__snapshot **out)
{
    *out = NULL;
    struct mh__snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return MH_ENOMEM;
    s->ses = ses;
    s->reader = mh__session_reader(ses);
    if (opts)
        s->opts = *opts;
    s->lend_device = -1;
    int rc = replay(s, PASS_COUNT);
    if (rc == 0)
        rc = finish_count(s);
    if (rc < 0) {
        mh__snapshot_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* What a narrowing pass counts again. */
static void reset_counts(struct mh__snapshot *s)
{
    for (int d = 0; d < s->ndev; d++)
        s->dev[d].seen = s->dev[d].base = 0;
    s->notes.len = s->notes.head = 0;
    s->notes.seen = 0;
    mh__snapshot_est_free(&s->est);
    s->nsteps = s->nsamples = 0;
    s->stride = s->collected = 0;
    s->saw_steps = s->derived_steps = 0;
    memset(&s->info, 0, sizeof s->info);
    s->categorized = 0;
    s->lend_device = -1;
}

int mh__snapshot_narrow(struct mh__snapshot *s, const struct mh__snapshot_fit *fit,
                        mh__snapshot_window_fn in_window, void *user)
{
    if (s->opts.in_window || s->opts.max_entries)
        return MH_ESTATE; /* the first pass must have counted the whole run */
    reset_counts(s);
    drop_kept(s); /* the whole run's */
    s->info.estimate_bytes = fit->bytes;
    s->opts.in_window = in_window;
    s->opts.window_user = user;
    int rc = replay(s, PASS_NARROW);
    if (rc == 0 && !s->opts.no_categories)
        mh__snapshot_settle(s);
    if (rc == 0)
        rc = finish_count(s);
    return rc;
}

/* The entries the first pass kept, the last max_entries of them in order. */
static void write_kept(struct mh__snapshot *s, struct mh__sdev *t)
{
    s->write_pos = t->seen - t->kept.len;
    s->write_from = 0;
    for (size_t i = 0; i < t->kept.len; i++) {
        struct mh__sentry e = *mh__sring_at(&t->kept, i);
        write_entry(s, &e);
    }
}

int mh__snapshot_replay_device(struct mh__snapshot *s, int device)
{
    struct mh__sdev *t = &s->dev[device];
    uint64_t cap = s->opts.max_entries;
    s->write_device = device;
    if (!s->keep_off) {
        write_kept(s, t);
        return 0;
    }
    s->write_pos = 0;
    s->write_from = cap && t->seen > cap ? t->seen - cap : 0;
    int rc = replay(s, PASS_WRITE);
    s->pass = PASS_COUNT;
    if (rc == 0 && s->write_pos != t->seen)
        rc = MH_ESTATE; /* the file changed between the passes */
    return rc;
}

void mh__snapshot_info(const struct mh__snapshot *s, struct mh__snapshot_info *out)
{
    *out = s->info;
}

void mh__snapshot_free(struct mh__snapshot *s)
{
    if (!s)
        return;
    for (int d = 0; d < s->ndev; d++) {
        free(s->dev[d].cats.nib);
        free(s->dev[d].kept.e);
    }
    free(s->dev);
    free(s->notes.e);
    free(s->steps);
    free(s->samples);
    mh__snapshot_est_free(&s->est);
    mh_model_free(s->model);
    mh_model_free(s->window_model);
    mh__livecat_free(s->livecat);
    free(s);
}
