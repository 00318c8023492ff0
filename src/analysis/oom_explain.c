/* oom_explain.c - gathers what `memhist oom` explains about one moment (see
 * oom_explain.h): the allocator state replayed up to the OOM, free blocks per
 * pool and stream, the verdict, live memory by stack and by layer, the
 * what-if checked suggestions and the checkpointing plan. Owns each case's
 * arrays until mh__oom_case_free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oom_explain.h"
#include "oom_int.h"
#include "whatif_check.h"
#include "diag.h"

const char *mh__oom_verdict_name(int verdict)
{
    switch (verdict) {
    case MH__OOM_VERDICT_FRAGMENTATION: return "fragmentation";
    case MH__OOM_VERDICT_CROSS_STREAM: return "cross-stream caching";
    case MH__OOM_VERDICT_EXHAUSTION: return "exhaustion";
    default: return "none";
    }
}

static int add_free(void *user, const struct mh_segment_view *seg, const struct mh_block_view *blk)
{
    struct mh__oom_case *c = user;
    if (blk->state != MH_BLOCK_INACTIVE)
        return 0;
    size_t i = 0;
    while (i < c->nfree && !(c->free[i].stream == seg->stream && c->free[i].small_pool == seg->small_pool))
        i++;
    if (i == c->nfree) {
        struct mh__free_stat *p = realloc(c->free, (c->nfree + 1) * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        c->free = p;
        p[c->nfree++] = (struct mh__free_stat){seg->stream, seg->small_pool, 0, 0, 0};
    }
    struct mh__free_stat *f = &c->free[i];
    f->total += blk->size;
    f->blocks++;
    if (blk->size > f->largest)
        f->largest = blk->size;
    return 0;
}

int mh__oom_read_state(const struct mh_model *at, struct mh__oom_case *c, size_t top)
{
    int rc = mh_model_foreach_block(at, c->device, add_free, c);
    struct mh_mem_stats st;
    if (c->verdict == MH__OOM_VERDICT_NONE && mh_model_stats(at, c->device, &st) == 0) {
        c->oom.allocated = st.allocated;
        c->oom.reserved = st.reserved;
        c->oom.largest_free_any = mh_model_largest_free(at, c->device, UINT64_MAX, -1);
    }
    if (rc == 0)
        rc = mh__report_group_live(at, c->device, top, &c->stacks, &c->nstacks, &c->live_bytes,
                                   &c->live_count);
    return rc < 0 ? rc : 0;
}

static void decide(struct mh__oom_case *c)
{
    const struct mh_oom_info *o = &c->oom;
    uint64_t other = 0;
    c->small_pool = mh_is_small_size(o->request);
    for (size_t i = 0; i < c->nfree; i++)
        if (c->free[i].stream != o->stream && c->free[i].small_pool == c->small_pool &&
            c->free[i].largest > other)
            other = c->free[i].largest;
    if (c->verdict == MH__OOM_VERDICT_NONE)
        return;
    if (other >= o->request && o->largest_free_same_stream < o->request)
        c->verdict = MH__OOM_VERDICT_CROSS_STREAM;
    else if (o->allocated + o->request <= o->reserved + o->device_free)
        c->verdict = MH__OOM_VERDICT_FRAGMENTATION;
    else
        c->verdict = MH__OOM_VERDICT_EXHAUSTION;
}

static int by_bytes(const void *a, const void *b)
{
    const struct mh__named_bytes *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->name, y->name);
}

static int layers_at(struct mh__oom_case *c)
{
    size_t nl, nrec;
    const struct mh__layer_stats *st = mh__layers_list(c->ly, &nl);
    const struct mh__alloc_rec *recs = mh__layers_records(c->ly, &nrec);
    c->layers = calloc(nl ? nl : 1, sizeof *c->layers);
    if (!c->layers)
        return MH_ENOMEM;
    for (size_t l = 0; l < nl; l++)
        c->layers[l].name = st[l].name;
    for (size_t i = 0; i < nrec; i++) {
        int32_t l = mh__layers_layer_of(c->ly, &recs[i]);
        if (l >= 0 && mh__alloc_rec_live_at(&recs[i], c->oom.event_index))
            c->layers[l].bytes += recs[i].size;
    }
    qsort(c->layers, nl, sizeof *c->layers, by_bytes);
    c->nlayers = nl;
    while (c->nlayers > 0 && c->layers[c->nlayers - 1].bytes == 0)
        c->nlayers--;
    return 0;
}

/* max_split_size_mb candidate: half the request (or of the largest request
 * when explaining the peak), at least 20 MiB (torch's minimum). */
static uint64_t split_candidate_mb(const struct mh__analysis *a, const struct mh__oom_case *c)
{
    uint64_t size = c->oom.request;
    if (c->verdict == MH__OOM_VERDICT_NONE) {
        struct mh__life_curve curve;
        mh__lifetimes_curve(a->lt, c->device, &curve);
        if (curve.max_requested > size)
            size = curve.max_requested;
    }
    uint64_t mb = size / 2 / MH_MB;
    return mb < 20 ? 20 : mb;
}

/* The three candidate settings, each the recorded ones with one change. */
static void candidates(const struct mh__analysis *a, const struct mh__whatif_input *in,
                       const struct mh__oom_case *c, struct mh_alloc_conf conf[3])
{
    uint64_t mb = split_candidate_mb(a, c);
    for (int i = 0; i < 3; i++)
        conf[i] = in->conf;
    conf[0].expandable_segments = 1;
    conf[1].max_split_size = mb * MH_MB;
    conf[2].garbage_collection_threshold = 0.6;
    conf[2].memory_fraction = 1.0;
}

static void name_suggestion(struct mh__suggestion *s, int i, const struct mh_alloc_conf *conf)
{
    if (i == 0)
        snprintf(s->setting, sizeof s->setting, "expandable_segments:True");
    else if (i == 1)
        snprintf(s->setting, sizeof s->setting, "max_split_size_mb:%llu",
                 (unsigned long long)(conf->max_split_size / MH_MB));
    else
        snprintf(s->setting, sizeof s->setting,
                 "garbage_collection_threshold:0.6 + memory fraction 1.0");
}

/* A replay the cases of a device ran already, or NULL. */
static const struct mh__oom_replay *replayed(const struct mh__oom_replays *rs,
                                             const struct mh__sim_replay_opts *ro, int baseline)
{
    for (size_t i = 0; rs && i < rs->n; i++)
        if (rs->r[i].baseline == baseline && rs->r[i].capacity == ro->capacity &&
            memcmp(&rs->r[i].conf, &ro->conf, sizeof ro->conf) == 0)
            return &rs->r[i];
    return NULL;
}

/* Runs the jobs no case ran yet and keeps them for the next cases. */
static void run_jobs(const struct mh__whatif_input *in, struct mh__whatif_job *jobs, size_t n,
                     struct mh__oom_replays *rs)
{
    struct mh__whatif_job todo[4];
    int from[4]; /* per job: its index in todo, or -1 when replayed already */
    size_t ntodo = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mh__oom_replay *r = replayed(rs, &jobs[i].ro, jobs[i].baseline);
        from[i] = r ? -1 : (int)ntodo;
        if (r) {
            jobs[i].rc = r->rc;
            jobs[i].out = r->out;
        } else {
            todo[ntodo++] = jobs[i];
        }
    }
    mh__whatif_run_all(in, todo, ntodo);
    for (size_t i = 0; i < n; i++)
        if (from[i] >= 0)
            jobs[i] = todo[from[i]];
    for (size_t i = 0; rs && i < ntodo && rs->n < MH__OOM_REPLAYS; i++)
        rs->r[rs->n++] = (struct mh__oom_replay){todo[i].ro.conf, todo[i].ro.capacity,
                                                 todo[i].baseline, todo[i].rc, todo[i].out};
}

/* The replays behind the suggestions (and the baseline where the case's
 * capacity is not the one it was given for) run at once, two at a time,
 * each once for all the cases of a device (`rs`). */
static void suggest(const struct mh__analysis *a, const struct mh__whatif_input *in,
                    struct mh__oom_case *c, struct mh__oom_replays *rs)
{
    struct mh_alloc_conf conf[3];
    struct mh__whatif_job jobs[4];
    int job_of[3];
    size_t njobs = 0;
    candidates(a, in, c, conf);
    /* replays get what the recorded allocator could use (the whole run's, as
     * `whatif` does), not the device's total, part of which the CUDA context holds */
    uint64_t capacity = 0;
    if (!(c->capacity_estimated && c->verdict == MH__OOM_VERDICT_NONE))
        capacity = c->usable ? c->usable : c->capacity;
    int given = c->baseline_given && capacity == c->usable;
    memset(jobs, 0, sizeof jobs);
    if (!given) {
        jobs[njobs].ro = (struct mh__sim_replay_opts){.conf = in->conf, .capacity = capacity,
                                                     .use_oracle = 1};
        jobs[njobs].ro.progress_what = "replay under the recorded settings";
        jobs[njobs++].baseline = 1;
    }
    for (int i = 0; i < 3; i++) {
        struct mh__suggestion *s = &c->sugg[i];
        c->nsugg = (size_t)i + 1;
        name_suggestion(s, i, &conf[1]);
        struct mh_alloc_conf probe = conf[i]; /* the change alone */
        if (i == 2)
            probe.memory_fraction = in->conf.memory_fraction;
        job_of[i] = -1;
        if (memcmp(&probe, &in->conf, sizeof probe) == 0) {
            s->in_effect = 1;
            continue;
        }
        job_of[i] = (int)njobs;
        jobs[njobs].ro.conf = conf[i];
        jobs[njobs++].ro.capacity = capacity;
    }
    run_jobs(in, jobs, njobs, rs);
    if (!given && jobs[0].rc == 0)
        c->baseline = jobs[0].out;
    c->replay_match = given || jobs[0].rc == 0 ? c->baseline.match : -1;
    c->estimates = !mh__whatif_checked(c->replay_match < 0 ? NULL : &c->baseline);
    for (int i = 0; i < 3; i++) {
        const struct mh__whatif_job *j = job_of[i] < 0 ? NULL : &jobs[job_of[i]];
        struct mh__suggestion *s = &c->sugg[i];
        if (j && j->rc == 0) {
            s->ok = 1;
            s->ooms = j->out.ooms;
            s->peak_reserved = j->out.peak_reserved;
            s->peak_allocated = j->out.peak_allocated;
        }
    }
}

static int plan(struct mh__oom_case *c)
{
    const uint64_t *after;
    const size_t *order;
    size_t n, best;
    int rc = mh__layers_plan(c->ly, &order, &after, &n, &best);
    c->peak_allocated = mh__layers_peak(c->ly, NULL, NULL);
    c->nplan = best;
    c->plan_peak_after = best ? after[best - 1] : c->peak_allocated;
    if (rc == 0 && !(c->plan = malloc((best ? best : 1) * sizeof *c->plan)))
        rc = MH_ENOMEM;
    if (rc == 0 && best)
        memcpy(c->plan, order, best * sizeof *c->plan);
    return rc;
}

/* Forward activations of the OOM's step that each layer holds at the OOM. */
static int drops_at_oom(const struct mh__oom_case *c, uint64_t *drop)
{
    size_t nrec;
    const struct mh__alloc_rec *recs = mh__layers_records(c->ly, &nrec);
    for (size_t i = 0; i < nrec; i++) {
        const struct mh__alloc_rec *r = &recs[i];
        int32_t l = mh__layers_layer_of(c->ly, r);
        if (l >= 0 && mh__alloc_rec_live_at(r, c->oom.event_index) &&
            r->alloc_phase == MH_PHASE_FORWARD && !r->before_forward &&
            r->category == MH__CAT_ACTIVATION && r->alloc_step == c->oom.step)
            drop[l] += r->size;
    }
    return 0;
}

/* At an OOM: the fewest layers (known checkpointing candidates, most
 * activation bytes live at the OOM first) whose activations, minus the
 * largest recompute transient, free what the request lacks (or, for
 * fragmentation, the request's size). Counts the layers' outputs too, so it
 * is an upper bound on what is freed. */
static int oom_plan(struct mh__oom_case *c)
{
    size_t nl;
    const struct mh__layer_stats *st = mh__layers_list(c->ly, &nl);
    uint64_t *drop = calloc(nl ? nl : 1, sizeof *drop);
    c->plan = malloc((nl ? nl : 1) * sizeof *c->plan);
    if (!drop || !c->plan) {
        free(drop);
        return MH_ENOMEM;
    }
    drops_at_oom(c, drop);
    const struct mh_oom_info *o = &c->oom;
    uint64_t avail = o->reserved + o->device_free;
    uint64_t need = o->allocated + o->request > avail ? o->allocated + o->request - avail : o->request;
    uint64_t sum = 0, transient = 0;
    uint8_t *used = calloc(nl ? nl : 1, 1);
    if (!used) {
        free(drop);
        return MH_ENOMEM;
    }
    while (c->plan_freed < need) {
        size_t best = nl;
        for (size_t l = 0; l < nl; l++)
            if (!used[l] && st[l].candidate && drop[l] > 0 && (best == nl || drop[l] > drop[best]))
                best = l;
        if (best == nl)
            break;
        used[best] = 1;
        c->plan[c->nplan++] = best;
        sum += drop[best];
        if (st[best].transient > transient)
            transient = st[best].transient;
        c->plan_freed = sum > transient ? sum - transient : 0;
    }
    c->plan_fits = c->nplan > 0 && o->allocated - c->plan_freed + o->request <= avail;
    free(used);
    free(drop);
    return 0;
}

void mh__oom_case_free(struct mh__oom_case *c)
{
    free(c->free);
    free(c->stacks);
    free(c->layers);
    free(c->plan);
}

void mh__oom_setup(const struct mh__analysis *a, struct mh__layers *ly, const struct mh__oom_opts *o,
                   struct mh__oom_case *c)
{
    const struct mh_model *m = a->rp.model;
    struct mh_peak p;
    c->ly = ly;
    mh__device_info(a->rp.reader, c->device, &c->info);
    if (mh_model_peak_reserved(m, c->device, &p) == 0)
        c->recorded_peak_reserved = p.value;
    c->mid_run = mh_reader_meta(a->rp.reader, "trace_start") != NULL;
    c->capacity = c->info.total_bytes;
    if (!c->capacity) {
        /* at the peak there is no CUDA free figure: the capacity is unknown (0) */
        c->capacity = o->at_peak ? 0 : c->oom.reserved + c->oom.device_free;
        c->capacity_estimated = 1;
    } else if (c->verdict != MH__OOM_VERDICT_NONE && c->capacity > c->oom.device_free + c->oom.reserved) {
        c->outside = c->capacity - c->oom.device_free - c->oom.reserved;
    }
}

int mh__oom_conclude(const struct mh__analysis *a, const struct mh__whatif_input *in,
                     struct mh__oom_case *c, struct mh__oom_replays *rs)
{
    int rc = layers_at(c);
    decide(c);
    if (rc == 0)
        rc = c->verdict == MH__OOM_VERDICT_NONE ? plan(c) : oom_plan(c);
    if (rc == 0)
        suggest(a, in, c, rs);
    return rc;
}

/* The moments to explain on one device: its OOMs, or its allocated peak. */
size_t mh__oom_moments(const struct mh_model *m, int device, int at_peak, struct mh_oom_info *out,
                       size_t max)
{
    size_t k = 0;
    if (at_peak) {
        struct mh_peak p;
        if (mh_model_peak_allocated(m, device, &p) != 0 || p.value == 0)
            return 0;
        memset(out, 0, sizeof *out);
        out->device = device;
        out->time_ns = p.time_ns;
        out->step = p.step;
        out->event_index = p.event_index;
        return 1;
    }
    for (size_t i = 0; i < mh_model_oom_count(m) && k < max; i++)
        if (mh_model_oom(m, i, &out[k]) == 0 && out[k].device == device)
            k++;
    return k;
}
