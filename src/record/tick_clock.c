/* tick_clock.c - the torch bridge's clock (see torch_support.h): torch's
 * approximate-clock ticks, which stamp its allocator trace entries, to
 * Unix-epoch ns.
 *
 * Two copies of the fit, flipped by `cur`, so the allocating thread reads a
 * consistent one without locking while a refinement writes the other. The
 * calibration runs once when recording starts; refinements measure the slope
 * over the baseline from the calibration anchor to now, at most every 10 s,
 * from optimizer steps (never from the allocator's trace hook), and bend the
 * fit without a jump (mh__tick_fit_refine) so the clock never reads back. */
#include <stdatomic.h>
#include <time.h>

#include "torch_support.h"

#define CALIBRATION_READINGS 201
#define READING_GAP_NS 20000ull         /* about 4 ms in all */
#define REFINE_EVERY_NS 10000000000ull

static struct mh__tick_fit fits[2];
static atomic_int cur;
static uint64_t last_refine_ns;
static uint64_t anchor_ticks, anchor_ns; /* the calibration's fit at its first reading */

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void publish(const struct mh__tick_fit *f)
{
    int next = 1 - atomic_load_explicit(&cur, memory_order_relaxed);
    fits[next] = *f;
    atomic_store_explicit(&cur, next, memory_order_release);
}

/* Each tick value is the midpoint of the two reads around clock_gettime. */
int mh__tick_clock_calibrate(uint64_t (*ticks)(void))
{
    uint64_t t[CALIBRATION_READINGS], ns[CALIBRATION_READINGS];
    for (size_t i = 0; i < CALIBRATION_READINGS; i++) {
        uint64_t a = ticks();
        ns[i] = realtime_ns();
        uint64_t b = ticks();
        t[i] = a + (b - a) / 2;
        uint64_t until = ns[i] + READING_GAP_NS;
        while (realtime_ns() < until) {
        }
    }
    struct mh__tick_fit f;
    int rc = mh__tick_fit(t, ns, CALIBRATION_READINGS, &f);
    if (rc < 0)
        return rc;
    publish(&f);
    anchor_ticks = f.ticks0;
    anchor_ns = f.ns0;
    last_refine_ns = ns[CALIBRATION_READINGS - 1];
    return 0;
}

void mh__tick_clock_refine(uint64_t (*ticks)(void))
{
    uint64_t now = realtime_ns();
    if (now - last_refine_ns < REFINE_EVERY_NS)
        return;
    last_refine_ns = now;
    const struct mh__tick_fit *f = &fits[atomic_load_explicit(&cur, memory_order_acquire)];
    uint64_t a = ticks(), n = realtime_ns(), b = ticks();
    uint64_t t = a + (b - a) / 2;
    if (t <= anchor_ticks || n <= anchor_ns)
        return;
    double slope = (double)(n - anchor_ns) / (double)(t - anchor_ticks);
    struct mh__tick_fit g;
    if (mh__tick_fit_refine(f, slope, t, n, REFINE_EVERY_NS, &g) == 0)
        publish(&g);
}

uint64_t mh__tick_clock_ns(uint64_t ticks)
{
    return mh__tick_to_ns(&fits[atomic_load_explicit(&cur, memory_order_acquire)], ticks);
}
