/* plot_fit.h - the PNG of `memhist fit`: the peak reserved memory of each
 * run against the value tried, one curve per kind of card (the runs made
 * as it), a horizontal line at each card's usable memory, and the largest
 * value that fits each card marked on its line. Its input is plain arrays
 * (src/cli/fit_plot.c fills them from fit's answer); the picture is drawn
 * on the canvas of canvas.h and written by png_out.c. Library code: it
 * never prints. */
#ifndef MH_VIZ_PLOT_FIT_H
#define MH_VIZ_PLOT_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "sink.h"

/* One run: its value and peak reserved; an OOM run is drawn where it ran
 * out (its reserved memory then, a lower bound of what it needed). */
struct mh__fit_plot_point {
    int64_t value;
    uint64_t reserved;
    int oom;
    int series; /* index into series */
};

/* One card: its usable memory (less any headroom), the largest value that
 * fits (-1: none) and the kind whose curve it reads. */
struct mh__fit_plot_card {
    const char *label;
    uint64_t limit;
    int64_t fits;
    int series;
};

struct mh__fit_plot {
    const char *title;         /* first line */
    const char *xname;         /* the value's name, for the x axis */
    const char *const *series; /* names of the kinds of card */
    size_t nseries;
    const struct mh__fit_plot_point *points;
    size_t npoints;
    const struct mh__fit_plot_card *cards;
    size_t ncards;
    int width, height; /* 0: 1000 x 620 */
};

/* Draws the plot and writes it to `out` as PNG. Returns 0 or a negative
 * code (MH_EINVAL with a message in err for input that cannot be drawn). */
int mh__plot_fit_render(const struct mh__fit_plot *p, struct mh__sink *out, char *err, size_t errlen);

#endif
