/* whatif_check.c - candidate settings checked by replay (see
 * whatif_check.h). The what-if run's events go through a fresh model, so
 * its peaks are computed exactly as the recording's are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatif_check.h"
#include "sim_replay.h"
#include "diag.h"

int mh__whatif_load(const char *path, int device, struct mh_whatif_input *in)
{
    struct mh_reader *r;
    struct mh_event e;
    size_t cap = 0;
    memset(in, 0, sizeof *in);
    in->device = device;
    int rc = mh__open_reader(path, &r);
    if (rc < 0)
        return rc;
    while ((rc = mh_reader_next(r, &e)) == 1) {
        int alloc_kind = mh__sim_is_allocator_kind(e.kind);
        if (alloc_kind && in->device < 0)
            in->device = e.device;
        if (alloc_kind && e.device != in->device)
            continue;
        if (in->n == cap) {
            size_t nc = cap ? cap * 2 : 65536;
            struct mh_event *p = realloc(in->ev, nc * sizeof *p);
            if (!p) {
                rc = MH_ENOMEM;
                break;
            }
            in->ev = p;
            cap = nc;
        }
        in->ev[in->n++] = e;
    }
    if (rc < 0 && rc != MH_ENOMEM) {
        /* damage: the events before it are used; the caller may say so */
        snprintf(in->damage, sizeof in->damage, "%s", mh_reader_errmsg(r));
        rc = 0;
    }
    mh__file_conf(r, &in->conf);
    struct mh_device_info d;
    mh__device_info(r, in->device, &d);
    in->total_bytes = d.total_bytes;
    mh_reader_close(r);
    if (rc < 0) {
        mh__diag("%s: %s", path, mh_strerror(rc));
        mh__whatif_input_free(in);
    }
    return rc;
}

void mh__whatif_input_free(struct mh_whatif_input *in)
{
    free(in->ev);
    in->ev = NULL;
    in->n = 0;
}

struct sink_model {
    struct mh_model *m;
    uint64_t ooms;
};

static int to_model(void *user, const struct mh_event *ev)
{
    struct sink_model *s = user;
    if (ev->kind == MH_EV_OOM)
        s->ooms++;
    return mh_model_apply(s->m, ev, NULL);
}

static int run(const struct mh_whatif_input *in, const struct mh_alloc_conf *conf,
               uint64_t capacity, int oracle, struct mh_whatif_outcome *out)
{
    struct mh_model_opts mo;
    struct sink_model s = {0};
    struct mh_sim_replay_opts ro;
    struct mh_sim_replay_result res;
    memset(out, 0, sizeof *out);
    memset(&mo, 0, sizeof mo);
    memset(&ro, 0, sizeof ro);
    mo.conf = *conf;
    int rc = mh_model_new(&mo, &s.m);
    if (rc < 0)
        return rc;
    ro.conf = *conf;
    ro.capacity = capacity;
    ro.use_oracle = oracle;
    ro.emit = to_model;
    ro.emit_user = &s;
    rc = mh__sim_replay(in->ev, in->n, &ro, &res);
    if (rc == 0) {
        struct mh_peak p;
        mh_model_finish(s.m);
        if (mh_model_peak_reserved(s.m, 0, &p) == 0)
            out->peak_reserved = p.value;
        if (mh_model_peak_allocated(s.m, 0, &p) == 0)
            out->peak_allocated = p.value;
        out->ooms = s.ooms;
        uint64_t n = res.recorded_alloc_events > res.simulated_alloc_events
                         ? res.recorded_alloc_events
                         : res.simulated_alloc_events;
        out->match = n ? 100.0 * (double)res.matched / (double)n : 100.0;
    }
    mh_model_free(s.m);
    return rc;
}

int mh__whatif_conf(const struct mh_alloc_conf *base, const char *change, struct mh_alloc_conf *out)
{
    char text[640], err[160];
    mh_alloc_conf_format(base, text, sizeof text);
    size_t used = strlen(text);
    snprintf(text + used, sizeof text - used, "%s%s", used ? "," : "", change);
    double fraction = base->memory_fraction;
    if (mh_alloc_conf_parse(text, out, err, sizeof err) != 0)
        return MH_EINVAL;
    if (out->memory_fraction == 0)
        out->memory_fraction = fraction;
    return 0;
}

int mh__whatif_run(const struct mh_whatif_input *in, const struct mh_alloc_conf *conf,
                   uint64_t capacity, struct mh_whatif_outcome *out)
{
    return run(in, conf, capacity, 0, out);
}

int mh__whatif_baseline(const struct mh_whatif_input *in, uint64_t capacity,
                        struct mh_whatif_outcome *out)
{
    return run(in, &in->conf, capacity, 1, out);
}
