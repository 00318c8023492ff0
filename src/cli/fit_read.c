/* fit_read.c - what one run of `memhist fit` showed: its recording replayed
 * through a session (peaks, steps, retries, the first OOM and the phase it
 * came in, the most requested bytes live at once) and the categories at
 * its allocated peak (what does not grow with the value: parameters,
 * gradients, optimizer state), the virtual device's counts of the run
 * (vdev_stats.c: the device memory in use at most, allocations refused,
 * free-memory queries) and how the program ended. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "fit.h"
#include "session.h"

/* The counts of every process that used the device, summed; the peak of
 * the process with the most. */
static void read_stats(struct mh__fit_trial *t)
{
    FILE *f = fopen(t->stats, "r");
    char line[256];
    t->has_stats = 0;
    t->peak_used = t->refused = t->mem_info = t->mem_info_late = 0;
    while (f && fgets(line, sizeof line, f)) {
        int pid, dev;
        unsigned long long peak, refused, info, late, cap;
        if (sscanf(line,
                   "pid %d device %d peak_used %llu refused %llu mem_info %llu "
                   "mem_info_after_refusal %llu capacity %llu",
                   &pid, &dev, &peak, &refused, &info, &late, &cap) != 7)
            continue;
        t->has_stats = 1;
        if (peak > t->peak_used)
            t->peak_used = peak;
        t->refused += refused;
        t->mem_info += info;
        t->mem_info_late += late;
    }
    if (f)
        fclose(f);
}

/* Requested bytes live at once per device up to the first OOM, that
 * request included (and in the forward and backward phases alone, which
 * grow with batch size and sequence length as the optimizer's do not), and
 * the phase of the first OOM. Until then the program's requests are the
 * same on every device of the kind (the allocator's decisions do not reach
 * the program unless it asks how much memory is free, or a request
 * succeeds only after the allocator freed its cache, whose timing differs
 * between devices), so a card whose allocator may use less than this peak
 * cannot run it. Segments freed and then one allocated count such retries
 * (conservatively: torch.cuda.empty_cache() counts too). */
struct demand {
    int64_t live[64];
    uint64_t peak, fb_peak;
    int oom_seen, oom_phase;
    int64_t step_ends[64];  /* steps a device's own markers ended */
    int64_t all_step_ends;  /* markers that end a step on every device */
    int segments_freed;     /* cached segments freed since the last segment allocation */
    uint64_t early_retries; /* ... and then a segment allocated: a retry that succeeded */
};

static int demand_event(void *user, struct mh__session *s, const struct mh_event *ev,
                        const struct mh_apply_result *res)
{
    struct demand *d = user;
    (void)res;
    int dev = ev->device >= 0 && ev->device < 64 ? ev->device : 0;
    if (ev->kind == MH_EV_STEP_END) {
        if (ev->flags & MH_EVF_DEVICE_STEP)
            d->step_ends[dev]++;
        else
            d->all_step_ends++;
    }
    if (d->oom_seen)
        return 0; /* after an OOM the program does what it does only there */
    if (ev->kind == MH_EV_ALLOC) {
        d->live[dev] += (int64_t)ev->size;
        uint64_t live = d->live[dev] > 0 ? (uint64_t)d->live[dev] : 0;
        int phase = mh_model_current_phase(mh__session_model(s));
        if (live > d->peak)
            d->peak = live;
        if ((phase == MH_PHASE_FORWARD || phase == MH_PHASE_BACKWARD) && live > d->fb_peak)
            d->fb_peak = live;
    } else if (ev->kind == MH_EV_SEGMENT_FREE || ev->kind == MH_EV_SEGMENT_UNMAP) {
        d->segments_freed = 1;
    } else if (ev->kind == MH_EV_SEGMENT_ALLOC || ev->kind == MH_EV_SEGMENT_MAP) {
        d->early_retries += d->segments_freed;
        d->segments_freed = 0;
    } else if (ev->kind == MH_EV_FREE_REQUESTED) {
        d->live[dev] -= (int64_t)ev->size;
    } else if (ev->kind == MH_EV_OOM) {
        d->oom_seen = 1;
        d->oom_phase = mh_model_current_phase(mh__session_model(s));
        uint64_t need = (uint64_t)(d->live[dev] > 0 ? d->live[dev] : 0) + ev->size;
        if (need > d->peak) /* the failing request too (its rounded size) */
            d->peak = need;
    }
    return 0;
}

static uint64_t step_retries(const struct mh_model *m, int dev)
{
    struct mh_step_stats st;
    uint64_t n = 0;
    for (size_t i = 0; i < mh_model_step_count(m, dev); i++)
        if (mh_model_step(m, dev, i, &st) == 0)
            n += st.retries;
    if (mh_model_setup(m, dev, &st) == 0)
        n += st.retries;
    if (mh_model_tail(m, dev, &st) == 0)
        n += st.retries;
    return n;
}

/* Whether the last complete step's peak reserved is above every earlier
 * step's: the run may not have settled. */
static void rising(const struct mh_model *m, int dev, struct mh__fit_trial *t)
{
    size_t n = mh_model_step_count(m, dev);
    struct mh_step_stats last, st;
    uint64_t before = 0;
    t->rising = 0;
    if (n < 2 || mh_model_step(m, dev, n - 1, &last) != 0)
        return;
    for (size_t i = 0; i + 1 < n; i++)
        if (mh_model_step(m, dev, i, &st) == 0 && st.peak_reserved > before)
            before = st.peak_reserved;
    if (last.peak_reserved > before) {
        t->rising = 1;
        t->rising_from = before;
        t->rising_to = last.peak_reserved;
    }
}

static int busiest_device(const struct mh_model *m)
{
    int best = -1;
    uint64_t top = 0;
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        struct mh_peak p;
        int dev = mh_model_device_at(m, i);
        if (mh_model_peak_reserved(m, dev, &p) == 0 && (best < 0 || p.value > top)) {
            best = dev;
            top = p.value;
        }
    }
    return best;
}

static void first_oom(const struct mh_model *m, const struct demand *d, struct mh__fit_trial *t)
{
    struct mh_oom_info oom;
    if (mh_model_oom_count(m) == 0 || mh_model_oom(m, 0, &oom) != 0)
        return;
    t->outcome = MH__FIT_OOM;
    t->oom.request = oom.request;
    t->oom.allocated = oom.allocated;
    t->oom.reserved = oom.reserved;
    t->oom.step = oom.step;
    t->oom.phase = d->oom_phase;
}

/* Parameters, gradients and optimizer state live at the allocated peak:
 * what does not grow with the value. */
static void persistent_bytes(struct mh__fit_trial *t, int dev)
{
    struct mh__analysis a;
    const struct mh__lifetimes *use;
    struct mh__lifetimes *own = NULL;
    struct mh_peak p;
    uint64_t bytes[MH__CAT_COUNT] = {0};
    if (mh__analysis_open(t->path, NULL, &a) < 0)
        return;
    if (mh_model_peak_allocated(a.rp.model, dev, &p) == 0 && p.value &&
        mh__analysis_records_at(&a, &p.event_index, 1, &use, &own) == 0 &&
        mh__lifetimes_live_by_category(use, dev, p.event_index, bytes, NULL) == 0)
        t->persistent =
            bytes[MH__CAT_PARAMETER] + bytes[MH__CAT_GRADIENT] + bytes[MH__CAT_OPTIMIZER_STATE];
    if (own)
        mh__lifetimes_free(own);
    mh__analysis_close(&a);
}

static int read_recording(struct mh__fit_trial *t)
{
    struct mh__session *s;
    struct demand d;
    memset(&d, 0, sizeof d);
    const struct mh__observer obs = {"fit demand", &d, NULL, demand_event, NULL};
    int rc = mh__session_open(t->path, &s);
    if (rc < 0)
        return rc;
    mh__session_set_progress(s, NULL);
    if ((rc = mh__session_pass(s, &obs)) < 0) {
        mh__session_close(s);
        return rc;
    }
    const struct mh_model *m = mh__session_model(s);
    int dev = busiest_device(m);
    if (dev >= 0) {
        struct mh_peak pa, pr;
        mh_model_peak_allocated(m, dev, &pa);
        mh_model_peak_reserved(m, dev, &pr);
        t->peak_allocated = pa.value;
        t->peak_reserved = pr.value;
        t->steps = d.all_step_ends + (dev < 64 ? d.step_ends[dev] : 0);
        t->retries = step_retries(m, dev);
        rising(m, dev, t);
    }
    t->peak_requested = d.peak;
    t->fb_requested = d.fb_peak;
    t->early_retries = d.early_retries;
    first_oom(m, &d, t);
    mh__session_close(s);
    if (dev >= 0 && !d.oom_seen)
        persistent_bytes(t, dev);
    return 0;
}

int mh__fit_trial_read(const struct mh__fit_opts *o, struct mh__fit_trial *t)
{
    (void)o;
    t->done = 1;
    t->outcome = MH__FIT_RAN;
    read_stats(t);
    unlink(t->stats);
    if (t->stopped) {
        t->outcome = t->stopped;
        return 0;
    }
    if (access(t->path, R_OK) != 0) {
        t->outcome = MH__FIT_FAILED;
        return 0;
    }
    int rc = read_recording(t);
    if (rc < 0) {
        t->outcome = MH__FIT_FAILED;
        return rc;
    }
    if (t->outcome == MH__FIT_OOM)
        return 0;
    if (t->exit_status != 0)
        t->outcome = MH__FIT_FAILED;
    else if (t->steps < 1)
        t->outcome = MH__FIT_NO_STEP;
    return 0;
}
