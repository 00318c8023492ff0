/* plot_warp.c - the timeline's compressed time axis. A real run spends
 * seconds building its model, loading data or compiling with no allocator
 * activity, and on a linear axis the training steps end up squeezed at one
 * edge. Pass 1 (plot_scan.c) offers every interval between two memory
 * events of the plotted device; the longest are kept, and those much longer
 * than the activity around them become gaps drawn `keep` ns wide. Axis
 * values are then "warped ns since t0"; tick labels show the real time
 * (mh__plot_unwarp), and the timeline marks each gap. With --x time, fewer
 * than MH__PLOT_WARP_MIN_EVENTS memory events or no gap found, the warp is
 * the identity. With knots (--x events|steps, plot_xmap.c) the knots map. */
#include <string.h>

#include "plot_int.h"

void mh__plot_warp_offer(struct mh__plot_warp *w, uint64_t a, uint64_t b)
{
    if (b <= a)
        return;
    uint64_t len = b - a;
    if (w->n < MH__PLOT_GAPS) {
        w->a[w->n] = a;
        w->len[w->n++] = len;
        return;
    }
    int small = 0; /* replace the shortest kept interval if this one is longer */
    for (int i = 1; i < w->n; i++)
        if (w->len[i] < w->len[small])
            small = i;
    if (len > w->len[small]) {
        w->a[small] = a;
        w->len[small] = len;
    }
}

/* Keeps the intervals longer than a twentieth of the time left once they
 * are taken out (found by iterating), in time order, each drawn as a
 * twentieth of that. */
void mh__plot_warp_finish(struct mh__plot_warp *w, uint64_t span)
{
    uint64_t threshold = span / 20;
    for (int iter = 0; iter < 8; iter++) {
        uint64_t cut = 0;
        for (int i = 0; i < w->n; i++)
            if (w->len[i] > threshold)
                cut += w->len[i];
        uint64_t next = (span - cut) / 20;
        if (next == threshold)
            break;
        threshold = next;
    }
    int m = 0;
    for (int i = 0; i < w->n; i++)
        if (w->len[i] > threshold && threshold > 0) {
            w->a[m] = w->a[i];
            w->len[m++] = w->len[i];
        }
    w->n = m;
    for (int i = 1; i < m; i++) /* insertion sort by start */
        for (int j = i; j > 0 && w->a[j] < w->a[j - 1]; j--) {
            uint64_t ta = w->a[j], tl = w->len[j];
            w->a[j] = w->a[j - 1];
            w->len[j] = w->len[j - 1];
            w->a[j - 1] = ta;
            w->len[j - 1] = tl;
        }
    w->keep = threshold > 0 ? threshold : 1;
}

double mh__plot_warp(const struct mh__plot_warp *w, uint64_t t0, uint64_t t)
{
    if (w && w->nk > 0)
        return mh__plot_xmap_value(w, t);
    if (t <= t0)
        return 0;
    double v = (double)(t - t0);
    for (int i = 0; w && i < w->n; i++) {
        uint64_t a = w->a[i], len = w->len[i];
        if (t <= a)
            break;
        double inside = (double)(t - a < len ? t - a : len);
        v -= inside - inside * (double)w->keep / (double)len;
    }
    return v;
}

double mh__plot_unwarp(const struct mh__plot_warp *w, uint64_t t0, double v)
{
    if (w && w->nk > 0)
        return mh__plot_xmap_time(w, t0, v);
    double t = v; /* real ns since t0 */
    for (int i = 0; w && i < w->n; i++) {
        double a = (double)(w->a[i] - t0), len = (double)w->len[i], keep = (double)w->keep;
        double wa = mh__plot_warp(w, t0, w->a[i]); /* warped start of the gap */
        if (v <= wa)
            break;
        if (v < wa + keep)
            return a + (v - wa) * len / keep;
        t = a + len + (v - wa - keep);
    }
    return t;
}
