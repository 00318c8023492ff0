/* canvas.h - the small RGB raster canvas the PNG plots draw on.
 *
 * Everything the timeline and segment views draw goes through these
 * primitives: pixels, lines, rectangles, hatched rectangles, filled
 * polygons and text in the embedded font (font.h). All drawing is clipped
 * to the canvas, integer-only and deterministic, so the same input always
 * gives the same pixels. png_out.c turns a canvas into a PNG. The canvas
 * owns its pixel buffer. Colours are 0xRRGGBB. */
#ifndef MH_VIZ_CANVAS_H
#define MH_VIZ_CANVAS_H

#include <stdint.h>

struct mh__canvas {
    int width, height;
    uint8_t *px; /* width * height * 3 bytes, rows top to bottom, RGB */
};

/* Limits of a canvas side, so a typo cannot ask for gigabytes. */
#define MH__CANVAS_MAX_SIDE 16384

/* Allocates a canvas filled with `bg`. MH_EINVAL for sides outside
 * [1, MH__CANVAS_MAX_SIDE], MH_ENOMEM. */
int mh__canvas_init(struct mh__canvas *c, int width, int height, uint32_t bg);
/* Frees the pixels; accepts a zeroed or released canvas. */
void mh__canvas_release(struct mh__canvas *c);

void mh__canvas_pixel(struct mh__canvas *c, int x, int y, uint32_t rgb);
/* Reads a pixel (0 outside the canvas). */
uint32_t mh__canvas_get(const struct mh__canvas *c, int x, int y);

/* Filled rectangle with its top-left corner at (x, y). */
void mh__canvas_rect(struct mh__canvas *c, int x, int y, int w, int h, uint32_t rgb);
/* One-pixel outline of the same rectangle. */
void mh__canvas_frame(struct mh__canvas *c, int x, int y, int w, int h, uint32_t rgb);
/* Rectangle filled with diagonal stripes of `rgb` every `period` pixels
 * (background pixels are left alone). */
void mh__canvas_hatch(struct mh__canvas *c, int x, int y, int w, int h, uint32_t rgb, int period);

/* Inclusive vertical and horizontal spans (endpoints in any order). */
void mh__canvas_vline(struct mh__canvas *c, int x, int y0, int y1, uint32_t rgb);
void mh__canvas_hline(struct mh__canvas *c, int x0, int x1, int y, uint32_t rgb);
/* Dashed vertical span: `on` pixels drawn, `off` skipped, from y0 down. */
void mh__canvas_vdash(struct mh__canvas *c, int x, int y0, int y1, uint32_t rgb, int on, int off);
/* Straight line between two points (Bresenham), `thick` pixels wide
 * (1 or more; extra width goes below and to the right). */
void mh__canvas_line(struct mh__canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb, int thick);
/* Filled polygon given as n (x, y) pairs, even-odd rule, sampled at pixel
 * centres. */
void mh__canvas_polygon(struct mh__canvas *c, const int *xy, int n, uint32_t rgb);

/* Text with its top-left corner at (x, y), glyphs scaled by `scale`.
 * Returns the width drawn in pixels. */
int mh__canvas_text(struct mh__canvas *c, int x, int y, const char *text, uint32_t rgb, int scale);
/* Same, clipped to at most `max_w` pixels: text that does not fit is cut
 * and ends in "..". */
int mh__canvas_text_fit(struct mh__canvas *c, int x, int y, const char *text, uint32_t rgb,
                        int scale, int max_w);

#endif
