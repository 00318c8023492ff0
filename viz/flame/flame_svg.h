/* flame_svg.h - the flame graph outputs of `memhist flame`: a self-contained
 * SVG picture and the folded-stack text that flamegraph.pl, inferno and
 * speedscope read.
 *
 * Input is a finished flame tree (src/analysis/flame.h); output is bytes
 * written to a sink (viz/common/sink.h). The SVG draws the root at the
 * bottom and each node's children above it, left to right in the tree's
 * order, widths proportional to bytes; every frame has a hover title (name,
 * bytes with units and exact, share of the live bytes, allocations, bytes
 * by category), a fill by its main memory category (with a legend) and a
 * label cut to fit its box. Frames narrower than a tenth of a pixel are left
 * out. Same tree and options, same bytes. Library code: never prints. */
#ifndef MH_VIZ_FLAME_SVG_H
#define MH_VIZ_FLAME_SVG_H

#include "flame.h"
#include "sink.h"

#define MH__FLAME_SVG_WIDTH 1200

struct mh__flame_svg_opts {
    const char *title;    /* first line (borrowed; any bytes, made safe); NULL = none */
    const char *subtitle; /* second line, e.g. the moment; NULL = none */
    int width;            /* pixels; 0 = MH__FLAME_SVG_WIDTH */
};

int mh__flame_svg_write(const struct mh__flame *f, const struct mh__flame_svg_opts *o,
                        struct mh__sink *out);

/* One line per node with self bytes: "frame;frame;frame BYTES\n". */
int mh__flame_folded_write(const struct mh__flame *f, struct mh__sink *out);

#endif
