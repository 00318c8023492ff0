/* plot_legend.c - the timeline's legend: the coloured allocation groups
 * (modules when the recording has module scopes, else allocation sites; or
 * memory categories) with their bytes at the peak, then what each line,
 * marker and strip means (see plot_int.h). */
#include <stdio.h>

#include "font.h"
#include "palette.h"
#include "plot_int.h"

static int swatch_row(struct mh__canvas *c, int x, int y, int w, uint32_t col, const char *size,
                      const char *label)
{
    mh__canvas_rect(c, x, y, 10, 9, col);
    mh__canvas_frame(c, x, y, 10, 9, 0x888888u);
    mh__canvas_text(c, x + 16, y + 1, size, MH__COL_TEXT, 1);
    mh__canvas_text_fit(c, x + 16 + 9 * MH__FONT_ADVANCE, y + 1, label, MH__COL_TEXT, 1,
                        w - 16 - 9 * MH__FONT_ADVANCE);
    return y + 14;
}

static int line_row(struct mh__canvas *c, int x, int y, int w, uint32_t col, int thick,
                    int dashed, const char *label)
{
    if (dashed)
        for (int i = 0; i < 14; i += 4)
            mh__canvas_rect(c, x + i, y + 4, 2, thick, col);
    else
        mh__canvas_rect(c, x - 2, y + 4, 16, thick, col);
    mh__canvas_text_fit(c, x + 20, y + 1, label, MH__COL_TEXT, 1, w - 20);
    return y + 14;
}

/* Coloured by category: every category with its bytes at the peak. */
static int category_rows(struct mh__canvas *c, const struct mh__plot_scan *s, int x, int y, int w)
{
    char b[32], head[96];
    snprintf(head, sizeof head, "Live at the peak (%s),",
             mh__plot_bytes(s->peak.value, b, sizeof b));
    mh__canvas_text_fit(c, x, y, head, MH__COL_TEXT, 1, w);
    mh__canvas_text_fit(c, x, y + 11, "by memory category (as memhist report):", MH__COL_TEXT, 1, w);
    y += 28;
    for (int k = 0; k < MH__CAT_COUNT; k++)
        y = swatch_row(c, x, y, w, mh__palette_category(k),
                       mh__plot_bytes(s->group_peak[k], b, sizeof b), mh__category_name(k));
    return y;
}

static int group_rows(struct mh__canvas *c, const struct mh__plot_scan *s, int x, int y, int w)
{
    char b[32], head[96];
    if (s->by_category)
        return category_rows(c, s, x, y, w);
    snprintf(head, sizeof head, "Live at the peak (%s),",
             mh__plot_bytes(s->peak.value, b, sizeof b));
    mh__canvas_text_fit(c, x, y, head, MH__COL_TEXT, 1, w);
    mh__canvas_text_fit(c, x, y + 11,
                        s->sites.scopes ? "by module (else file:line function):"
                                        : "by allocation site (file:line function):",
                        MH__COL_TEXT, 1, w);
    y += 28;
    for (unsigned g = 0; g < s->ngroups; g++)
        y = swatch_row(c, x, y, w, mh__palette_group(g),
                       mh__plot_bytes(s->group_peak[g], b, sizeof b), s->labels[g]);
    if (s->group_peak[s->ngroups] > 0 || s->ngroups == 0)
        y = swatch_row(c, x, y, w, MH__COL_REST,
                       mh__plot_bytes(s->group_peak[s->ngroups], b, sizeof b),
                       s->ngroups ? (s->sites.scopes ? "all other modules and sites"
                                                     : "all other sites")
                                  : "all allocations");
    return y;
}

void mh__plot_legend(struct mh__canvas *c, const struct mh__plot_scan *s,
                     const struct mh__plot_frame *f)
{
    int x = f->legend_x, w = f->legend_w - 24;
    int y = group_rows(c, s, x, f->legend_y, w);
    y += 10;
    y = line_row(c, x, y, w, MH__COL_ALLOCATED, 1, 0, "allocated (memory_allocated)");
    y = line_row(c, x, y, w, MH__COL_RESERVED, 2, 0, "reserved by the allocator (memory_reserved)");
    if (s->has_driver)
        y = line_row(c, x, y, w, MH__COL_DRIVER, 2, 0, "driver memory outside the allocator");
    y = line_row(c, x, y, w, MH__COL_STEP, 1, 1, "step boundary (labelled with its number)");
    int ooms = 0;
    for (size_t i = 0; i < mh_model_oom_count(s->model); i++) {
        struct mh_oom_info oom;
        ooms += mh_model_oom(s->model, i, &oom) == 0 && oom.device == s->device;
    }
    if (ooms)
        y = line_row(c, x, y, w, MH__COL_OOM, 2, 0, "out-of-memory error (OOM)");
    int tri[6] = {x + 1, y + 1, x + 11, y + 1, x + 6, y + 9};
    mh__canvas_polygon(c, tri, 3, MH__COL_PEAK);
    mh__canvas_text_fit(c, x + 20, y + 1, "peak of allocated memory", MH__COL_TEXT, 1, w - 20);
    y += 24;
    mh__canvas_text_fit(c, x, y, "Strips below, per step:", MH__COL_TEXT, 1, w);
    y += 14;
    mh__canvas_rect(c, x, y, 10, 9, MH__COL_RESERVED_FILL);
    mh__canvas_text_fit(c, x + 16, y + 1, "peak reserved", MH__COL_TEXT, 1, w - 16);
    y += 14;
    mh__canvas_rect(c, x, y, 10, 9, 0x555555u);
    mh__canvas_text_fit(c, x + 16, y + 1, "peak allocated", MH__COL_TEXT, 1, w - 16);
    y += 14;
    mh__canvas_rect(c, x, y, 10, 9, MH__COL_FRAG);
    mh__canvas_text_fit(c, x + 16, y + 1, "fragmentation at the reserved peak", MH__COL_TEXT, 1,
                        w - 16);
    y += 11;
    mh__canvas_text_fit(c, x + 16, y + 1, "(1 - allocated / reserved)", MH__COL_MUTED, 1, w - 16);
}
