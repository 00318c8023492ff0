/* flame_svg.c - a flame tree drawn as a self-contained SVG flame graph (see
 * flame_svg.h): header lines, the category legend, one <g> per frame with
 * its <title>, <rect> and cut-to-fit <text>. Text is a monospace font so a
 * label's width is known from its length. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "flame_svg.h"
#include "palette.h"
#include "units.h"
#include "utf8.h"

#define FRAME_H 17 /* one level of the graph, with a pixel between levels */
#define FONT_PX 11
#define CHAR_W 6.6 /* FONT_PX * 0.6: the advance of a monospace glyph */
#define MARGIN 10
#define HEAD_H 78 /* title, subtitle and legend above the graph */
#define FOOT_H 26
#define MIN_W 0.1 /* frames narrower than this are left out */

/* Writes text as XML character data: well-formed UTF-8, control characters
 * as \xNN, markup characters as entities. */
static void xml_text(struct mh__sink *out, const char *s)
{
    char safe[2048];
    mh__utf8_escape(s, strlen(s), MH__UTF8_ESC_CONTROL, safe, sizeof safe);
    const char *run = safe;
    for (const char *p = safe;; p++) {
        const char *ent = *p == '&'   ? "&amp;"
                          : *p == '<' ? "&lt;"
                          : *p == '>' ? "&gt;"
                          : *p == '"' ? "&quot;"
                                      : NULL;
        if (!ent && *p)
            continue;
        mh__sink_write(out, run, (size_t)(p - run));
        if (!*p)
            break;
        mh__sink_puts(out, ent);
        run = p + 1;
    }
}

/* The first `max` characters of a UTF-8 string, with ".." in place of
 * the rest when it is longer; 0 when not even three characters fit. */
static int fit_label(const char *s, int max, char *buf, size_t len)
{
    int chars = 0;
    for (const char *p = s; *p; p++)
        chars += ((unsigned char)*p & 0xC0) != 0x80;
    if (chars <= max) {
        snprintf(buf, len, "%s", s);
        return 1;
    }
    if (max < 3)
        return 0;
    int keep = max - 2, seen = 0;
    const char *p = s;
    for (; *p; p++) {
        if (((unsigned char)*p & 0xC0) != 0x80 && seen++ == keep)
            break;
    }
    snprintf(buf, len, "%.*s..", (int)(p - s), s);
    return 1;
}

/* The label of a frame: a module index with its container ("h.11"). */
static const char *label_of(const struct mh__flame_node *nd, char *buf, size_t len)
{
    int digits = nd->name[0] != '\0';
    for (const char *p = nd->name; *p; p++)
        digits &= *p >= '0' && *p <= '9';
    if (nd->kind != MH__FLAME_MODULE || !digits || !nd->detail)
        return nd->name;
    const char *start = nd->detail + strlen(nd->detail) - strlen(nd->name);
    for (int dots = 0; start > nd->detail; start--)
        if (start[-1] == '.' && ++dots == 2)
            break;
    snprintf(buf, len, "%s", start);
    return buf;
}

/* Fill: the category's colour, a little lighter or darker per name so that
 * neighbours of one category stay apart. */
static uint32_t fill_of(const struct mh__flame_node *nd)
{
    uint32_t c = mh__palette_category(mh__flame_main_category(nd)), h = 2166136261u;
    for (const char *p = nd->name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    int shift = (int)(h % 25) - 12, out = 0;
    for (int k = 0; k < 3; k++) {
        int v = (int)((c >> (8 * k)) & 0xFF) + shift;
        out |= (v < 0 ? 0 : v > 255 ? 255 : v) << (8 * k);
    }
    return (uint32_t)out;
}

static void write_title(struct mh__sink *out, const struct mh__flame_node *nd, uint64_t total)
{
    char b[32], line[160];
    mh__sink_puts(out, "<title>");
    xml_text(out, nd->detail && nd->kind != MH__FLAME_ROOT ? nd->detail : nd->name);
    snprintf(line, sizeof line,
             "\n%s (%" PRIu64 " bytes), %.2f%% of live, %" PRIu64 " allocation%s",
             mh__bytes_text(nd->bytes, b), nd->bytes,
             total ? 100.0 * (double)nd->bytes / (double)total : 0.0, nd->count,
             nd->count == 1 ? "" : "s");
    mh__sink_puts(out, line);
    const char *sep = "\n";
    for (int c = 0; c < MH__CAT_COUNT; c++)
        if (nd->by_category[c]) {
            mh__sink_printf(out, "%s%s %s", sep, mh__category_name(c),
                            mh__bytes_text(nd->by_category[c], b));
            sep = ", ";
        }
    mh__sink_puts(out, "</title>");
}

struct layout {
    struct mh__sink *out;
    const struct mh__flame_node *nodes;
    double scale; /* pixels per byte */
    int base_y;   /* top of the root's box */
    uint64_t total;
};

static void draw_node(const struct layout *l, uint32_t i, double x)
{
    const struct mh__flame_node *nd = &l->nodes[i];
    double w = (double)nd->bytes * l->scale;
    if (w < MIN_W)
        return;
    int y = l->base_y - (int)nd->depth * FRAME_H;
    mh__sink_printf(l->out, "<g class=\"f%s\">", i == 0 ? " root" : "");
    write_title(l->out, nd, l->total);
    mh__sink_printf(l->out,
                    "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"#%06X\" rx=\"2\"/>",
                    x, y, w, FRAME_H - 1, (unsigned)fill_of(nd));
    char lab[600], fitted[600], b[32];
    const char *text = label_of(nd, lab, sizeof lab);
    if (nd->kind == MH__FLAME_ROOT) {
        snprintf(lab, sizeof lab, "%s: %s", nd->name, mh__bytes_text(nd->bytes, b));
        text = lab;
    }
    if (fit_label(text, (int)((w - 6) / CHAR_W), fitted, sizeof fitted)) {
        mh__sink_printf(l->out, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_H - 5);
        xml_text(l->out, fitted);
        mh__sink_puts(l->out, "</text>");
    }
    mh__sink_puts(l->out, "</g>\n");
    for (uint32_t c = nd->first_child; c != MH__FLAME_NONE; c = l->nodes[c].next_sibling) {
        draw_node(l, c, x);
        x += (double)l->nodes[c].bytes * l->scale;
    }
}

static void write_head(struct mh__sink *out, const struct mh__flame_svg_opts *o, int width,
                       int height)
{
    mh__sink_printf(out,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                    "height=\"%d\" viewBox=\"0 0 %d %d\">\n"
                    "<style>text{font-family:\"DejaVu Sans Mono\",Menlo,Consolas,monospace;"
                    "font-size:%dpx;fill:#222}.h1{font-size:15px;font-weight:bold}"
                    ".f text{pointer-events:none}.f rect{stroke:#fff;stroke-width:0.5}"
                    ".f:hover rect{stroke:#000;stroke-width:1}</style>\n"
                    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
                    width, height, width, height, FONT_PX);
    if (o->title) {
        mh__sink_printf(out, "<text class=\"h1\" x=\"%d\" y=\"22\">", MARGIN);
        xml_text(out, o->title);
        mh__sink_puts(out, "</text>\n");
    }
    if (o->subtitle) {
        mh__sink_printf(out, "<text x=\"%d\" y=\"42\">", MARGIN);
        xml_text(out, o->subtitle);
        mh__sink_puts(out, "</text>\n");
    }
}

static void write_legend(struct mh__sink *out, const struct mh__flame_node *root)
{
    double x = MARGIN;
    char b[32], text[96];
    for (int c = 0; c < MH__CAT_COUNT; c++) {
        if (!root->by_category[c])
            continue;
        snprintf(text, sizeof text, "%s %s (%.1f%%)", mh__category_name(c),
                 mh__bytes_text(root->by_category[c], b),
                 100.0 * (double)root->by_category[c] / (double)root->bytes);
        mh__sink_printf(out,
                        "<rect x=\"%.1f\" y=\"54\" width=\"12\" height=\"12\" fill=\"#%06X\" "
                        "stroke=\"#555\" stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"64\">%s"
                        "</text>\n",
                        x, (unsigned)mh__palette_category(c), x + 17, text);
        x += 17 + CHAR_W * (double)strlen(text) + 18;
    }
}

int mh__flame_svg_write(const struct mh__flame *f, const struct mh__flame_svg_opts *o,
                        struct mh__sink *out)
{
    size_t n;
    const struct mh__flame_node *nodes = mh__flame_nodes(f, &n);
    uint32_t depth = 0;
    for (size_t i = 0; i < n; i++)
        depth = nodes[i].depth > depth ? nodes[i].depth : depth;
    int width = o->width > 0 ? o->width : MH__FLAME_SVG_WIDTH;
    int height = HEAD_H + (int)(depth + 1) * FRAME_H + FOOT_H;
    write_head(out, o, width, height);
    write_legend(out, &nodes[0]);
    struct layout l = {out, nodes, 0, HEAD_H + (int)depth * FRAME_H, nodes[0].bytes};
    if (nodes[0].bytes)
        l.scale = (double)(width - 2 * MARGIN) / (double)nodes[0].bytes;
    draw_node(&l, 0, MARGIN);
    mh__sink_printf(
        out,
        "<text x=\"%d\" y=\"%d\" style=\"fill:#666\">width: bytes live; the root at the "
        "bottom; hover a frame for its bytes and share; colour: its main "
        "category</text>\n</svg>\n",
        MARGIN, height - 9);
    return out->error;
}
