/* snapshot_import.c - snapshot import entry point (see snapshot_import.h):
 * parses the pickle strictly, converts it (snapshot_iconv.c,
 * snapshot_itrace.c), writes metadata from allocator_settings, the starting
 * state (snapshot_ireplay.c) and then the entries of all devices merged with
 * the annotations in time order. */
#include "snapshot_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/allocconf.h"
#include "memhist/error.h"
#include "snapshot_import_int.h"

#define MAX_DEVICES 4096

/* Whether annotation n goes before entry e in the merged order. At equal
 * times the step hints of memhist's own metadata decide. */
static int note_first(const struct mh__inote *n, const struct mh__ient *e)
{
    if (n->time_ns != e->time_ns)
        return n->time_ns < e->time_ns;
    if (!n->is_step || e->step_hint == INT64_MIN)
        return 1;
    return n->begin ? e->step_hint >= n->step : e->step_hint > n->step;
}

int mh__imp_put(struct mh__imp *im, const struct mh_event *ev)
{
    int rc = mh_writer_event(im->w, ev);
    return rc < 0 ? mh__imp_fail(im, rc, "writing the events: %s", mh_strerror(rc)) : 0;
}

static int emit_note(struct mh__imp *im, const struct mh__inote *n, int *phase)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.time_ns = n->time_ns;
    ev.device = (int16_t)n->device;
    if (n->is_step) {
        ev.kind = n->begin ? MH_EV_STEP_BEGIN : MH_EV_STEP_END;
        ev.aux = (uint32_t)n->step;
        if (n->begin)
            *phase = -1;
    } else {
        ev.kind = n->begin ? MH_EV_RANGE_BEGIN : MH_EV_RANGE_END;
        ev.str = n->str;
    }
    return mh__imp_put(im, &ev);
}

static int emit_entry(struct mh__imp *im, const struct mh__ient *e, int device, int *phase)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.time_ns = e->time_ns;
    ev.device = (int16_t)device;
    /* a phase change; "no phase" only matters after a named phase */
    if (e->phase_hint >= 0 && e->phase_hint != *phase &&
        (e->phase_hint != MH_PHASE_NONE || *phase > MH_PHASE_NONE)) {
        ev.kind = MH_EV_PHASE;
        ev.aux = (uint32_t)e->phase_hint;
        *phase = e->phase_hint;
        int rc = mh__imp_put(im, &ev);
        if (rc)
            return rc;
    }
    ev.kind = e->kind;
    ev.flags = e->flags;
    ev.addr = e->addr;
    ev.size = e->size;
    ev.stream = e->stream;
    ev.stack = e->stack;
    ev.str = e->str;
    ev.str2 = e->str2;
    ev.aux = e->aux;
    memcpy(ev.pool, e->pool, sizeof ev.pool);
    return mh__imp_put(im, &ev);
}

/* A device's read position in the store, through a buffer. */
struct cursor {
    struct mh__ient *buf;
    size_t at, len, next; /* next: entries of the device read so far */
};

/* The merge heap: devices ordered by the time of their next entry (then by
 * index), so each device's trace keeps its own order. */
struct heap {
    int *dev;
    size_t n;
    const struct cursor *cur;
};

static uint64_t next_time(const struct heap *h, int d)
{
    return h->cur[d].buf[h->cur[d].at].time_ns;
}

static int heap_less(const struct heap *h, int a, int b)
{
    uint64_t ta = next_time(h, a), tb = next_time(h, b);
    return ta != tb ? ta < tb : a < b;
}

static void heap_down(struct heap *h, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < h->n && heap_less(h, h->dev[l], h->dev[m]))
            m = l;
        if (l + 1 < h->n && heap_less(h, h->dev[l + 1], h->dev[m]))
            m = l + 1;
        if (m == i)
            return;
        int t = h->dev[i];
        h->dev[i] = h->dev[m];
        h->dev[m] = t;
        i = m;
    }
}

/* Reads the device's next entries; *more = 0 when it has none left. */
static int refill(struct mh__imp *im, int d, struct cursor *c, size_t cap, int *more)
{
    const struct mh__itrace *t = &im->traces[d];
    size_t n = t->n - c->next < cap ? t->n - c->next : cap;
    *more = n > 0;
    c->at = 0;
    c->len = n;
    int rc = n ? mh__istore_get(&im->store, t->first + c->next, n, c->buf) : 0;
    c->next += n;
    return rc ? mh__imp_fail(im, rc, "reading the trace back from its temporary file: %s",
                             mh_strerror(rc))
              : 0;
}

/* Writes the step note that opens a window's first entries when the window
 * starts inside a step (its START annotation lies before the window). */
static int open_window_step(struct mh__imp *im, const struct mh__ient *e, int dev, int *phase,
                            int64_t *synth)
{
    struct mh__inote n = {.time_ns = e->time_ns, .device = dev, .begin = 1, .is_step = 1,
                          .step = e->step_hint};
    *synth = e->step_hint;
    return emit_note(im, &n, phase);
}

/* Steps come from record_function ranges when the snapshot has
 * Optimizer.step# or ProfilerStep# annotations and no step markers of
 * memhist's own ("step N" annotations or user metadata). */
static int steps_from_ranges(const struct mh__imp *im)
{
    int ranges = 0;
    for (size_t i = 0; i < im->nnotes; i++) {
        if (im->notes[i].is_step)
            return 0;
        ranges |= im->notes[i].range_kind != MH__SR_OTHER;
    }
    return ranges && !im->step_hints;
}

int mh__imp_forward(struct mh__imp *im)
{
    size_t nd = im->ndev ? (size_t)im->ndev : 1, cap = 65536 / nd;
    cap = cap < 16 ? 16 : cap > 4096 ? 4096 : cap;
    struct cursor *cur = calloc(nd, sizeof *cur);
    int *devs = calloc(nd, sizeof *devs);
    int rc = cur && devs ? 0 : MH_ENOMEM, more;
    struct heap h = {devs, 0, cur};
    for (int d = 0; !rc && d < im->ndev; d++) {
        if (!im->traces[d].n)
            continue;
        if (!(cur[d].buf = malloc(cap * sizeof *cur[d].buf)))
            rc = MH_ENOMEM;
        else if (!(rc = refill(im, d, &cur[d], cap, &more)))
            h.dev[h.n++] = d;
    }
    for (size_t i = h.n / 2; i-- > 0;)
        heap_down(&h, i);
    size_t ni = 0;
    int phase = -1, seen_step = 0;
    int64_t synth = INT64_MIN; /* step opened for a window's first entries */
    struct mh__isteps st = {steps_from_ranges(im), 0, 1, MH_PHASE_NONE, 0, {{{0}}}};
    while (!rc && (h.n || ni < im->nnotes)) {
        int best = h.n ? h.dev[0] : -1;
        const struct mh__ient *e = best >= 0 ? &cur[best].buf[cur[best].at] : NULL;
        if (ni < im->nnotes && (!e || note_first(&im->notes[ni], e))) {
            const struct mh__inote *n = &im->notes[ni++];
            int dup = n->is_step && n->begin && n->step == synth;
            if (n->is_step) {
                seen_step = 1;
                synth = INT64_MIN;
            }
            rc = mh__isteps_before_note(im, &st, n);
            if (!rc && !dup)
                rc = emit_note(im, n, &phase);
            if (!rc)
                rc = mh__isteps_note(im, &st, n);
            continue;
        }
        rc = mh__isteps_entry(im, &st, e);
        if (!rc && !seen_step && e->step_hint >= 0) {
            seen_step = 1;
            rc = open_window_step(im, e, best, &phase, &synth);
        }
        if (!rc)
            rc = emit_entry(im, e, best, &phase);
        mh__imp_progress(im, 1);
        more = 1;
        if (!rc && ++cur[best].at == cur[best].len)
            rc = refill(im, best, &cur[best], cap, &more);
        if (!more)
            h.dev[0] = h.dev[--h.n];
        heap_down(&h, 0);
    }
    for (size_t d = 0; cur && d < nd; d++)
        free(cur[d].buf);
    free(cur);
    free(devs);
    return rc;
}

/* meta "alloc_conf": the settings string with the dict's values on top. */
static int settings_meta(struct mh__imp *im, const struct mh__pv *set)
{
    struct mh_alloc_conf conf;
    memset(&conf, 0, sizeof conf);
    const struct mh__pv *text = mh__pv_get(set, "PYTORCH_CUDA_ALLOC_CONF");
    if (text && text->type == MH__PV_STR && text->n < 4096) {
        char buf[4096];
        memcpy(buf, text->u.s, text->n);
        buf[text->n] = '\0';
        if (mh_alloc_conf_parse(buf, &conf, NULL, 0) != 0)
            memset(&conf, 0, sizeof conf);
    }
    int64_t v;
    double f;
    int b;
    if (mh__pv_i64(mh__pv_get(set, "max_split_size"), &v) == 0)
        conf.max_split_size = v < 0 ? 0 : (uint64_t)v;
    if (mh__pv_f64(mh__pv_get(set, "garbage_collection_threshold"), &f) == 0 && f > 0 && f < 1)
        conf.garbage_collection_threshold = f;
    if (mh__pv_bool(mh__pv_get(set, "expandable_segments"), &b) == 0)
        conf.expandable_segments = b;
    const struct mh__pv *div = mh__pv_get(set, "roundup_power2_divisions");
    for (int i = 0; i < 16 && div; i++) {
        char key[8];
        snprintf(key, sizeof key, "%u", 1u << i);
        if (mh__pv_i64(mh__pv_get(div, key), &v) == 0 && v >= 0 && v <= 1 << 16)
            conf.roundup_power2_divisions[i] = (uint32_t)v;
    }
    if (mh__pv_bool(mh__pv_get(set, "trace_alloc_overflowed"), &b) == 0 && b)
        im->info->overflowed = 1;
    char out[1024];
    mh_alloc_conf_format(&conf, out, sizeof out);
    return out[0] ? mh_writer_set_meta(im->w, "alloc_conf", out) : 0;
}

static int write_meta(struct mh__imp *im, const struct mh__pv *root)
{
    int rc = 0;
    const struct mh__pv *set = mh__pv_get(root, "allocator_settings");
    if (set && set->type == MH__PV_DICT) {
        char *text = NULL;
        rc = settings_meta(im, set);
        if (!rc)
            rc = mh__imp_settings_text(set, &text);
        if (!rc && text && text[0])
            rc = mh_writer_set_meta(im->w, "torch_allocator_settings", text);
        free(text);
    }
    const struct mh__pv *ver = mh__pv_get(root, "torch_version");
    if (!rc && ver && ver->type == MH__PV_STR && ver->n < 64) {
        char buf[64];
        memcpy(buf, ver->u.s, ver->n);
        buf[ver->n] = '\0';
        rc = mh_writer_set_meta(im->w, "torch_version", buf);
    }
    const struct mh__pv *hs = mh__pv_get(root, "host_segments"), *ht = mh__pv_get(root, "host_traces");
    if (!rc && hs && ht && mh__pv_is_seq(hs) && mh__pv_is_seq(ht) && !hs->n && !ht->n)
        rc = mh_writer_set_meta(im->w, "torch_host_memory", "empty");
    if (!rc && im->info->entries && im->entry_keys) {
        char keys[64];
        snprintf(keys, sizeof keys, "%s%s%s%s",
                 im->entry_keys & MH__IK_COMPILE ? "compile_context " : "",
                 im->entry_keys & MH__IK_USER ? "user_metadata " : "",
                 im->entry_keys & MH__IK_POOL ? "pool_id " : "",
                 im->entry_keys & MH__IK_FRAMES ? "frames " : "");
        keys[strlen(keys) - 1] = '\0';
        rc = mh_writer_set_meta(im->w, "torch_entry_keys", keys);
    }
    if (!rc && im->info->synthetic_times)
        rc = mh_writer_set_meta(im->w, "synthetic_times",
                                "the snapshot has no time_us: times show the order of "
                                "events (1 us apart), not when they happened");

    if (!rc && im->info->overflowed)
        rc = mh_writer_set_meta(im->w, "trace_overflowed",
                                "torch's trace ring buffer wrapped: older entries are missing");
    for (int d = 0; !rc && d < im->ndev; d++)
        rc = mh_writer_set_device(im->w, d, "", 0);
    for (size_t i = 0; !rc && i < im->nsegs; i++) /* a bare segment list has no traces */
        if (im->segs[i].device >= im->ndev && (i == 0 || im->segs[i].device != im->segs[i - 1].device))
            rc = mh_writer_set_device(im->w, im->segs[i].device, "", 0);
    return rc < 0 ? mh__imp_fail(im, rc, "writing metadata: %s", mh_strerror(rc)) : 0;
}

/* Known once the starting state is written (the meta lands after it). */
static int initial_state_meta(struct mh__imp *im)
{
    char text[200];
    if (im->info->entries && (im->info->preexisting_segments || im->info->preexisting_blocks)) {
        snprintf(text, sizeof text,
                 "the trace starts mid-run: %llu segment(s) and %llu block(s) were live before "
                 "its first entry",
                 (unsigned long long)im->info->preexisting_segments,
                 (unsigned long long)im->info->preexisting_blocks);
        int rc = mh_writer_set_meta(im->w, "trace_start", text);
        if (rc < 0)
            return mh__imp_fail(im, rc, "writing metadata: %s", mh_strerror(rc));
    }
    if (!im->info->unknown_initial)
        return 0;
    snprintf(text, sizeof text,
             "%llu block(s) allocated before the trace and freed during it: their sizes "
             "are estimated from the requests, so the starting state is not exact",
             (unsigned long long)im->info->unknown_initial);
    int rc = mh_writer_set_meta(im->w, "initial_state", text);
    return rc < 0 ? mh__imp_fail(im, rc, "writing metadata: %s", mh_strerror(rc)) : 0;
}

/* Time of the first entry or annotation: when the preexisting state is dated. */
static void start_time(struct mh__imp *im)
{
    uint64_t t = UINT64_MAX;
    for (int d = 0; d < im->ndev; d++) {
        struct mh__ient e;
        if (im->traces[d].n && mh__istore_get(&im->store, im->traces[d].first, 1, &e) == 0 &&
            e.time_ns < t)
            t = e.time_ns;
    }
    if (im->nnotes && im->notes[0].time_ns < t)
        t = im->notes[0].time_ns;
    im->t_start = t == UINT64_MAX ? 1000000000ull : t;
}

void mh__imp_free(struct mh__imp *im)
{
    mh__istore_free(&im->store);
    free(im->traces);
    free(im->segs);
    free(im->blks);
    free(im->notes);
    mh__ptrmap_free(im->frame_ids);
    mh__ptrmap_free(im->stack_ids);
}

static void imp_init(struct mh__imp *im, struct mh_writer *w, struct mh__import_info *info,
                     char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
    memset(im, 0, sizeof *im);
    im->w = w;
    im->info = info;
    im->err = err;
    im->errlen = errlen;
    im->store.fd = -1;
    im->entry_keys = MH__IK_COMPILE | MH__IK_USER | MH__IK_POOL | MH__IK_FRAMES;
}

/* ---- the streaming reader's sink (pickle_stream.h) ------------------------ */

struct sink_ctx {
    struct mh__imp *im;
    const struct mh__import_opts *o;
};

static int sink_item(void *ctx, int role, uint32_t list, uint64_t pos, const struct mh__pv *item)
{
    struct mh__imp *im = ((struct sink_ctx *)ctx)->im;
    if (role == MH__PS_SEGMENTS)
        return mh__imp_segment(im, item, pos);
    if (role == MH__PS_NOTES)
        return mh__imp_note(im, item);
    if (list >= MAX_DEVICES)
        return mh__imp_fail(im, MH_ELIMIT, "'device_traces' lists more than %d devices",
                            MAX_DEVICES);
    return mh__imp_entry(im, (int)list, pos, item);
}

static int sink_keep(void *ctx, const struct mh__pv *v, struct mh__pv *handle)
{
    return mh__imp_keep(((struct sink_ctx *)ctx)->im, v, handle);
}

static void sink_batch_end(void *ctx)
{
    mh__imp_forget_nodes(((struct sink_ctx *)ctx)->im);
}

static void sink_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct mh__imp *im = ((struct sink_ctx *)ctx)->im;
    mh__progress_report(&im->progress, im->what, done, total);
}

void mh__imp_progress(struct mh__imp *im, uint64_t n)
{
    im->units += n;
    if (im->units - im->units_told >= (1u << 16) || im->units >= im->units_total) {
        im->units_told = im->units;
        mh__progress_report(&im->progress, im->what, im->units, im->units_total);
    }
}

static void name_work(struct mh__imp *im, const struct mh__import_opts *o, int writing)
{
    const char *name = o->name ? o->name : "the snapshot";
    if (writing)
        snprintf(im->what, sizeof im->what, "writing %s's events", name);
    else
        snprintf(im->what, sizeof im->what, "importing %s", name);
}

/* Reads the pickle: streamed into im when it can be, else whole (*doc). */
static int read_pickle(struct mh__imp *im, const void *data, size_t len,
                       const struct mh__import_opts *o, struct mh__pickle_doc **doc)
{
    int rc = MH__PS_WHOLE, sunk = 0;
    if (!o->whole) {
        struct sink_ctx ctx = {im, o};
        struct mh__pickle_sink sink = {&ctx, sink_item, sink_keep, sink_batch_end,
                                      im->progress.fn ? sink_progress : NULL};
        rc = mh__pickle_stream(data, len, o->lim, o->mapped, &sink, doc, &sunk, im->err,
                               im->errlen);
        if (rc == 0)
            mh__progress_report(&im->progress, im->what, len, len);
        im->info->streamed = rc == 0;
    }
    if (rc != MH__PS_WHOLE)
        return rc;
    if (sunk) { /* start again: what was converted stays interned, unused */
        struct mh_writer *w = im->w;
        struct mh__import_info *info = im->info;
        struct mh__progress p = im->progress;
        char what[sizeof im->what];
        memcpy(what, im->what, sizeof what);
        mh__imp_free(im);
        imp_init(im, w, info, im->err, im->errlen);
        im->progress = p;
        memcpy(im->what, what, sizeof what);
    }
    if (im->err && im->errlen)
        im->err[0] = '\0';
    return mh__pickle_parse(data, len, o->lim, doc, im->err, im->errlen);
}

int mh__snapshot_import_with(const void *data, size_t len, const struct mh__import_opts *o,
                             struct mh_writer *w, struct mh__import_info *info, char *err,
                             size_t errlen)
{
    static const struct mh__import_opts dflt;
    struct mh__imp im;
    struct mh__pickle_doc *doc = NULL;
    if (err && errlen)
        err[0] = '\0';
    imp_init(&im, w, info, err, errlen);
    o = o ? o : &dflt;
    im.progress = o->progress ? *o->progress : mh__progress_default();
    name_work(&im, o, 0);
    int rc = read_pickle(&im, data, len, o, &doc);
    const struct mh__pv *root = doc ? mh__pickle_doc_root(doc) : NULL;
    if (!rc) {
        info->protocol = mh__pickle_doc_protocol(doc);
        rc = mh__imp_convert(&im, root);
    }
    if (!rc)
        rc = write_meta(&im, root);
    if (!rc) {
        start_time(&im);
        name_work(&im, o, 1);
        im.units_total = 2 * im.store.total;
        rc = mh__imp_emit(&im);
        if (!rc && im.units_total)
            mh__progress_report(&im.progress, im.what, im.units_total, im.units_total);
        if (!rc)
            rc = initial_state_meta(&im);
    }
    if (rc == MH_ENOMEM && err && errlen && !err[0])
        snprintf(err, errlen, "%s", mh_strerror(rc));
    mh__imp_free(&im);
    mh__pickle_doc_free(doc);
    return rc;
}

int mh__snapshot_import(const void *data, size_t len, const struct mh__pickle_limits *lim,
                        struct mh_writer *w, struct mh__import_info *info, char *err, size_t errlen)
{
    struct mh__import_opts o;
    memset(&o, 0, sizeof o);
    o.lim = lim;
    return mh__snapshot_import_with(data, len, &o, w, info, err, errlen);
}
