/* view_part.c - one recording's part of `memhist view`'s page: gathers the
 * answers of a file opened as an analysis (device reports, layers answers,
 * OOM cases, the timeline pass, the moments' trees) and writes them as one
 * JSON object in memory, with what the recording lacks (a cut or damaged
 * file, dropped events) and what the page leaves out for size. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "layers_answer.h"
#include "oom_explain.h"
#include "session.h"
#include "view_int.h"

struct mh__view_part {
    struct mh__sink sink;
};

/* One device's answers besides its report. */
struct gdev {
    int device;
    struct mh__layers_answer la;
    int la_ok;
    int la_error, oom_error; /* why an answer is missing, 0 if none */
    struct mh__oom_cases oom;
};

/* What one file's answers are made of, freed together. */
struct gathered {
    struct mh__device_reports reps;
    struct gdev *dev; /* in the model's device order */
    size_t ndev;
    struct mh__vt *vt;
    struct mh__vmoments *mom;
};

static struct mh__view_opts with_defaults(const struct mh__view_opts *o)
{
    struct mh__view_opts d = o ? *o : (struct mh__view_opts){0};
    d.max_moments = d.max_moments ? d.max_moments : 64;
    d.max_tree_nodes = d.max_tree_nodes ? d.max_tree_nodes : 400;
    d.max_events = d.max_events ? d.max_events : 40000;
    d.max_step_events = d.max_step_events ? d.max_step_events : 6000;
    d.max_steps_table = d.max_steps_table ? d.max_steps_table : 5000;
    return d;
}

static void release(struct gathered *g)
{
    for (size_t i = 0; g->dev && i < g->ndev; i++) {
        if (g->dev[i].la_ok)
            mh__layers_answer_free(&g->dev[i].la);
        mh__oom_cases_free(&g->dev[i].oom);
    }
    free(g->dev);
    mh__vt_free(g->vt);
    mh__vmoments_free(g->mom);
    mh__device_reports_free(&g->reps);
}

static const struct gdev *find_gdev(const struct gathered *g, int device)
{
    for (size_t i = 0; i < g->ndev; i++)
        if (g->dev[i].device == device)
            return &g->dev[i];
    return NULL;
}

/* Registers the timeline's and the moments' observers for one pass. */
static int ride(const struct mh__analysis *a, struct gathered *g)
{
    int rc = mh__session_observe(a->session, mh__vt_observer(g->vt));
    const struct mh__observer *mo = mh__vmoments_observer(g->mom);
    return rc == 0 && mo ? mh__session_observe(a->session, mo) : rc;
}

/* The layers answer and OOM cases of each device; the timeline and the
 * moments ride the first device's layers pass when it is exactly one
 * full pass, else they make passes of their own. */
static int gather_devices(const struct mh__analysis *a, struct gathered *g)
{
    int rc = 0, rode = 0;
    for (size_t i = 0; rc == 0 && i < g->ndev; i++) {
        struct gdev *d = &g->dev[i];
        d->device = mh_model_device_at(a->rp.model, i);
        unsigned passes = mh__session_passes(a->session);
        if (i == 0)
            rc = ride(a, g);
        d->la_error = rc ? rc : mh__layers_answer(a, d->device, &d->la);
        d->la_ok = d->la_error == 0;
        mh__session_forget(a->session);
        if (i == 0)
            rode = mh__session_passes(a->session) == passes + 1 && mh__vt_observed(g->vt);
        struct mh__oom_opts oo = {.top = 10};
        if (rc == 0 && (d->oom_error = mh__oom_cases(a, d->device, &oo, &d->oom)) < 0)
            memset(&d->oom, 0, sizeof d->oom);
    }
    if (rc == 0 && !rode)
        rc = mh__vt_pass(a, g->vt);
    return rc ? rc : mh__vmoments_complete(a, g->mom, rode);
}

/* The report comes last: its what-if replay, started during the first
 * pass, runs on its own thread while the other passes read the file. */
static int gather(const struct mh__analysis *a, const struct mh__view_opts *o, struct gathered *g)
{
    g->ndev = mh_model_device_count(a->rp.model);
    g->dev = calloc(g->ndev ? g->ndev : 1, sizeof *g->dev);
    int rc = g->dev ? mh__vt_new(a, o, &g->vt) : MH_ENOMEM;
    if (rc == 0)
        rc = mh__vmoments_new(a, o, &g->mom);
    if (rc == 0)
        rc = gather_devices(a, g);
    if (rc == 0)
        rc = mh__device_reports(a, -1, 10, &g->reps);
    return rc;
}

static void json_head(struct mh__json *j, const struct mh__analysis *a)
{
    const struct mh_file_summary *s = &a->rp.summary;
    mh__json_kv_string(j, "path", a->rp.path);
    mh__json_kv_string(j, "source", mh_reader_meta(a->rp.reader, "source"));
    mh__json_kv_uint(j, "events", s->events);
    mh__json_kv_uint(j, "dropped", s->dropped);
    mh__json_kv_bool(j, "complete", s->has_trailer);
    mh__json_kv_bool(j, "damaged", a->rp.read_error != 0 || s->damaged);
    mh__json_kv_uint(j, "damage_offset", s->damage_offset);
    mh__json_kv_string(j, "damage", a->rp.read_error ? mh_reader_errmsg(a->rp.reader) : NULL);
    mh__json_kv_uint(j, "t0_ns", a->rp.t0_ns ? a->rp.t0_ns : s->first_time_ns);
    mh__json_kv_uint(j, "first_time_ns", s->first_time_ns);
    mh__json_kv_uint(j, "last_time_ns", s->last_time_ns);
    mh__json_key(j, "anomalies");
    mh__json_begin_object(j);
    for (int k = 1; k < MH_ANOM_COUNT; k++)
        if (mh_model_anomaly_count(a->rp.model, k))
            mh__json_kv_uint(j, mh_anomaly_name(k), mh_model_anomaly_count(a->rp.model, k));
    mh__json_end_object(j);
}

static int json_part(struct mh__json *j, const struct mh__analysis *a,
                     const struct mh__view_opts *o, struct gathered *g, struct mh__vstr *s)
{
    struct mh__vdev v = {a, a->rp.reader, s, o};
    int rc = 0;
    mh__json_begin_object(j);
    json_head(j, a);
    mh__json_kv_uint(j, "moments_limit", o->max_moments);
    mh__json_kv_uint(j, "tree_node_limit", o->max_tree_nodes);
    mh__json_key(j, "devices");
    mh__json_begin_array(j);
    for (size_t i = 0; i < g->reps.n && rc == 0; i++) {
        mh__json_begin_object(j);
        const struct gdev *d = find_gdev(g, g->reps.devs[i].device);
        mh__vdev_json(j, &v, &g->reps.devs[i], d && d->la_ok ? &d->la : NULL, d ? &d->oom : NULL);
        mh__json_kv_string(j, "layers_error", d && d->la_error ? mh_strerror(d->la_error) : NULL);
        mh__json_kv_string(j, "oom_error", d && d->oom_error ? mh_strerror(d->oom_error) : NULL);
        mh__vt_device_json(g->vt, g->reps.devs[i].device, j, s, a->rp.reader);
        rc = mh__vmoments_json(g->mom, g->reps.devs[i].device, j, s, o);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_key(j, "strings");
    mh__vstr_json(s, j);
    mh__json_end_object(j);
    return rc ? rc : s->error;
}

int mh__view_part_make(const struct mh__analysis *a, const struct mh__view_opts *o_in,
                       struct mh__view_part **out)
{
    struct mh__view_opts o = with_defaults(o_in);
    struct mh__view_part *p = calloc(1, sizeof *p);
    if (!p)
        return MH_ENOMEM;
    struct gathered g = {0};
    struct mh__vstr s;
    struct mh__json j;
    mh__vstr_init(&s);
    mh__sink_init_mem(&p->sink);
    int rc = gather(a, &o, &g);
    if (rc == 0) {
        mh__json_init(&j, &p->sink, 0);
        rc = json_part(&j, a, &o, &g, &s);
    }
    rc = rc ? rc : p->sink.error;
    release(&g);
    mh__vstr_free(&s);
    if (rc < 0) {
        mh__view_part_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void mh__view_part_free(struct mh__view_part *p)
{
    if (!p)
        return;
    mh__sink_free(&p->sink);
    free(p);
}

size_t mh__view_part_size(const struct mh__view_part *p)
{
    return p->sink.len;
}

/* The part's JSON, for the page writer. */
const char *mh__view_part_json(const struct mh__view_part *p, size_t *len)
{
    *len = p->sink.len;
    return p->sink.buf;
}
