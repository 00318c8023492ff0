/* canvas.c - raster primitives of the PNG plots (see canvas.h). */
#include "canvas.h"

#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "font.h"

int mh__canvas_init(struct mh__canvas *c, int width, int height, uint32_t bg)
{
    memset(c, 0, sizeof *c);
    if (width < 1 || height < 1 || width > MH__CANVAS_MAX_SIDE || height > MH__CANVAS_MAX_SIDE)
        return MH_EINVAL;
    c->px = malloc((size_t)width * (size_t)height * 3);
    if (!c->px)
        return MH_ENOMEM;
    c->width = width;
    c->height = height;
    mh__canvas_rect(c, 0, 0, width, height, bg);
    return 0;
}

void mh__canvas_release(struct mh__canvas *c)
{
    if (!c)
        return;
    free(c->px);
    c->px = NULL;
    c->width = c->height = 0;
}

static inline void put(struct mh__canvas *c, int x, int y, uint32_t rgb)
{
    uint8_t *p = c->px + ((size_t)y * (size_t)c->width + (size_t)x) * 3;
    p[0] = (uint8_t)(rgb >> 16);
    p[1] = (uint8_t)(rgb >> 8);
    p[2] = (uint8_t)rgb;
}

void mh__canvas_pixel(struct mh__canvas *c, int x, int y, uint32_t rgb)
{
    if (x >= 0 && y >= 0 && x < c->width && y < c->height)
        put(c, x, y, rgb);
}

uint32_t mh__canvas_get(const struct mh__canvas *c, int x, int y)
{
    if (x < 0 || y < 0 || x >= c->width || y >= c->height)
        return 0;
    const uint8_t *p = c->px + ((size_t)y * (size_t)c->width + (size_t)x) * 3;
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/* Clips [*a, *b) to [0, max); returns 0 when nothing is left. */
static int clip(int *a, int *b, int max)
{
    if (*a < 0)
        *a = 0;
    if (*b > max)
        *b = max;
    return *a < *b;
}

void mh__canvas_rect(struct mh__canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
    int x1 = x + w, y1 = y + h;
    if (w <= 0 || h <= 0 || !clip(&x, &x1, c->width) || !clip(&y, &y1, c->height))
        return;
    for (int yy = y; yy < y1; yy++)
        for (int xx = x; xx < x1; xx++)
            put(c, xx, yy, rgb);
}

void mh__canvas_frame(struct mh__canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
    if (w <= 0 || h <= 0)
        return;
    mh__canvas_hline(c, x, x + w - 1, y, rgb);
    mh__canvas_hline(c, x, x + w - 1, y + h - 1, rgb);
    mh__canvas_vline(c, x, y, y + h - 1, rgb);
    mh__canvas_vline(c, x + w - 1, y, y + h - 1, rgb);
}

void mh__canvas_hatch(struct mh__canvas *c, int x, int y, int w, int h, uint32_t rgb, int period)
{
    if (period < 2)
        period = 2;
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++)
            if ((xx + yy) % period == 0)
                mh__canvas_pixel(c, xx, yy, rgb);
}

void mh__canvas_vline(struct mh__canvas *c, int x, int y0, int y1, uint32_t rgb)
{
    if (y0 > y1) {
        int t = y0;
        y0 = y1;
        y1 = t;
    }
    mh__canvas_rect(c, x, y0, 1, y1 - y0 + 1, rgb);
}

void mh__canvas_hline(struct mh__canvas *c, int x0, int x1, int y, uint32_t rgb)
{
    if (x0 > x1) {
        int t = x0;
        x0 = x1;
        x1 = t;
    }
    mh__canvas_rect(c, x0, y, x1 - x0 + 1, 1, rgb);
}

void mh__canvas_vdash(struct mh__canvas *c, int x, int y0, int y1, uint32_t rgb, int on, int off)
{
    if (y0 > y1) {
        int t = y0;
        y0 = y1;
        y1 = t;
    }
    int period = on + off > 0 ? on + off : 1;
    for (int y = y0; y <= y1; y++)
        if ((y - y0) % period < on)
            mh__canvas_pixel(c, x, y, rgb);
}

void mh__canvas_line(struct mh__canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb, int thick)
{
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    if (thick < 1)
        thick = 1;
    for (;;) {
        mh__canvas_rect(c, x0, y0, thick, thick, rgb);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void mh__canvas_polygon(struct mh__canvas *c, const int *xy, int n, uint32_t rgb)
{
    if (n < 3 || n > 256)
        return;
    int ymin = xy[1], ymax = xy[1];
    for (int i = 1; i < n; i++) {
        ymin = xy[2 * i + 1] < ymin ? xy[2 * i + 1] : ymin;
        ymax = xy[2 * i + 1] > ymax ? xy[2 * i + 1] : ymax;
    }
    int xs[256];
    for (int y = ymin; y <= ymax; y++) {
        /* crossings of the scanline through pixel centres (y + 0.5) */
        int k = 0;
        for (int i = 0; i < n; i++) {
            int ax = xy[2 * i], ay = xy[2 * i + 1];
            int bx = xy[2 * ((i + 1) % n)], by = xy[2 * ((i + 1) % n) + 1];
            if ((ay <= y) == (by <= y))
                continue;
            /* x at y + 0.5, in doubled coordinates to stay integral */
            long num = (long)(2 * y + 1 - 2 * ay) * (bx - ax);
            xs[k++] = ax + (int)(num / (2L * (by - ay)));
        }
        qsort(xs, (size_t)k, sizeof xs[0], cmp_int);
        for (int i = 0; i + 1 < k; i += 2)
            mh__canvas_hline(c, xs[i], xs[i + 1], y, rgb);
    }
}

static void draw_glyph(struct mh__canvas *c, int x, int y, int ch, uint32_t rgb, int scale)
{
    const char *const *rows = mh__font_glyph(ch);
    for (int r = 0; r < MH_FONT_GLYPH_H; r++)
        for (int col = 0; col < MH__FONT_GLYPH_W; col++)
            if (rows[r][col] == '#')
                mh__canvas_rect(c, x + col * scale, y + r * scale, scale, scale, rgb);
}

int mh__canvas_text(struct mh__canvas *c, int x, int y, const char *text, uint32_t rgb, int scale)
{
    return mh__canvas_text_fit(c, x, y, text, rgb, scale, 1 << 30);
}

int mh__canvas_text_fit(struct mh__canvas *c, int x, int y, const char *text, uint32_t rgb,
                        int scale, int max_w)
{
    if (scale < 1)
        scale = 1;
    int adv = MH__FONT_ADVANCE * scale;
    int fit = (max_w + scale) / adv; /* glyphs that fit */
    int total = 0; /* glyphs in the text */
    for (const char *p = text; mh__font_next_char(&p);)
        total++;
    int n = total <= fit ? total : (fit > 2 ? fit - 2 : 0);
    int ch, i = 0;
    while (i < n && (ch = mh__font_next_char(&text)) != 0)
        draw_glyph(c, x + adv * i++, y, ch, rgb, scale);
    if (total > fit && fit >= 2)
        for (int k = 0; k < 2; k++)
            draw_glyph(c, x + adv * i++, y, '.', rgb, scale);
    return i ? i * adv - scale : 0;
}
