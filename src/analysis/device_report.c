/* device_report.c - the answer of `memhist report` for one file (see
 * device_report.h): for each device its peaks, the categories and the
 * groups by stack live at its allocated peak, its fragmentation trend with
 * the what-if verdict, and what grows across its steps, from the analysis's
 * first pass (a second one only where the peak's records were not kept). */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "analysis.h"
#include "device_report.h"

static int build_device(const struct mh__analysis *a, const struct mh__lifetimes *at_peaks,
                        int device, size_t top, struct mh__device_report *d)
{
    const struct mh__replay *rp = &a->rp;
    memset(d, 0, sizeof *d);
    d->device = device;
    mh__device_info(rp->reader, device, &d->info);
    mh_model_peak_allocated(rp->model, device, &d->peak_allocated);
    mh_model_peak_reserved(rp->model, device, &d->peak_reserved);
    mh_model_stats(rp->model, device, &d->final);
    if (d->peak_allocated.value)
        mh__lifetimes_live_by_category(at_peaks, device, d->peak_allocated.event_index,
                                       d->category_at_peak, NULL);
    struct mh__whatif_input in;
    int rc = a->whatif ? mh__whatif_input(a->whatif, a->session, device, &in) : 0;
    if (rc < 0)
        return rc;
    if (a->whatif)
        mh__report_trend(rp->model, &in, &d->trend);
    if (a->growth &&
        (rc = mh__growth_get(a->growth, device, &d->growth, &d->ngrowth, &d->growth_window)) < 0)
        return rc;
    if (d->peak_allocated.value == 0 || !a->peaks)
        return 0;
    return mh__peak_groups_get(a->peaks, rp->model, device, top, &d->top, &d->ntop,
                               &d->live_at_peak_bytes, &d->live_at_peak_count);
}

/* The records live at each device's allocated peak, for their categories
 * (mh__analysis_records_at). */
static int records_at_peaks(const struct mh__analysis *a, const struct mh__lifetimes **use,
                            struct mh__lifetimes **own)
{
    const struct mh_model *m = a->rp.model;
    size_t n = 0, ndev = mh_model_device_count(m);
    uint64_t *at = calloc(ndev ? ndev : 1, sizeof *at);
    *own = NULL;
    if (!at)
        return MH_ENOMEM;
    for (size_t i = 0; i < ndev; i++) {
        struct mh_peak p;
        if (mh_model_peak_allocated(m, mh_model_device_at(m, i), &p) == 0 && p.value)
            at[n++] = p.event_index;
    }
    int rc = mh__analysis_records_at(a, at, n, use, own);
    free(at);
    return rc;
}

int mh__device_reports(const struct mh__analysis *a, int device, size_t top,
                       struct mh__device_reports *out)
{
    const struct mh_model *m = a->rp.model;
    const struct mh__lifetimes *at_peaks = NULL;
    struct mh__lifetimes *again = NULL;
    size_t n = mh_model_device_count(m);
    memset(out, 0, sizeof *out);
    out->devs = calloc(n ? n : 1, sizeof *out->devs);
    int rc = out->devs ? records_at_peaks(a, &at_peaks, &again) : MH_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int dev = mh_model_device_at(m, i);
        if (device < 0 || device == dev)
            rc = build_device(a, at_peaks, dev, top, &out->devs[out->n++]);
    }
    mh__lifetimes_free(again);
    if (rc < 0)
        mh__device_reports_free(out);
    return rc;
}

void mh__device_reports_free(struct mh__device_reports *r)
{
    for (size_t i = 0; r->devs && i < r->n; i++) {
        free(r->devs[i].top);
        free(r->devs[i].growth);
    }
    free(r->devs);
    memset(r, 0, sizeof *r);
}
