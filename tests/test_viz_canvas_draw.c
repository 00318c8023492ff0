/* test_viz_canvas_draw.c - the raster canvas, the embedded font and the PNG
 * round trip that the plots are built on. */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/error.h"
#include "canvas.h"
#include "font.h"
#include "png_out.h"

Test(canvas, init_rejects_bad_sizes)
{
    struct mh__canvas c;
    cr_assert_eq(mh__canvas_init(&c, 0, 10, 0), MH_EINVAL);
    cr_assert_eq(mh__canvas_init(&c, 10, MH__CANVAS_MAX_SIDE + 1, 0), MH_EINVAL);
    cr_assert_eq(mh__canvas_init(&c, 3, 2, 0x123456), 0);
    cr_assert_eq(mh__canvas_get(&c, 2, 1), 0x123456u);
    mh__canvas_release(&c);
    mh__canvas_release(&c);
}

Test(canvas, drawing_is_clipped)
{
    struct mh__canvas c;
    cr_assert_eq(mh__canvas_init(&c, 20, 10, 0xFFFFFF), 0);
    mh__canvas_rect(&c, -5, -5, 100, 100, 0xFF0000);
    mh__canvas_line(&c, -50, -50, 70, 70, 0x00FF00, 3);
    mh__canvas_text(&c, 15, 5, "clipped text", 0x0000FF, 2);
    cr_assert_eq(mh__canvas_get(&c, 0, 9), 0xFF0000u);
    cr_assert_eq(mh__canvas_get(&c, 20, 0), 0u, "outside reads as 0");
    mh__canvas_release(&c);
}

Test(canvas, line_and_polygon)
{
    struct mh__canvas c;
    cr_assert_eq(mh__canvas_init(&c, 30, 30, 0), 0);
    mh__canvas_line(&c, 0, 0, 29, 29, 0xFFFFFF, 1);
    for (int i = 0; i < 30; i++)
        cr_assert_eq(mh__canvas_get(&c, i, i), 0xFFFFFFu);
    int sq[8] = {10, 10, 20, 10, 20, 20, 10, 20};
    mh__canvas_polygon(&c, sq, 4, 0x00FF00);
    cr_assert_eq(mh__canvas_get(&c, 15, 12), 0x00FF00u);
    cr_assert_eq(mh__canvas_get(&c, 25, 12), 0u);
    mh__canvas_release(&c);
}

Test(font, every_glyph_is_well_formed)
{
    for (int ch = 32; ch < 127; ch++) {
        const char *const *rows = mh__font_glyph(ch);
        for (int r = 0; r < MH_FONT_GLYPH_H; r++) {
            cr_assert_eq(strlen(rows[r]), MH__FONT_GLYPH_W, "glyph %c row %d", ch, r);
            cr_assert_eq(strspn(rows[r], ".#"), MH__FONT_GLYPH_W);
        }
    }
    /* distinct shapes for characters people confuse */
    cr_assert_neq(memcmp(mh__font_glyph('0'), mh__font_glyph('O'), 0), 1);
    int differ = 0;
    for (int r = 0; r < MH_FONT_GLYPH_H; r++)
        differ += strcmp(mh__font_glyph('0')[r], mh__font_glyph('O')[r]) != 0;
    cr_assert_gt(differ, 0);
}

Test(font, utf8_micro_sign_reads_as_u)
{
    const char *s = "5 \xc2\xb5s \xe2\x82\xac";
    int out[8], n = 0, ch;
    while ((ch = mh__font_next_char(&s)) != 0 && n < 8)
        out[n++] = ch;
    cr_assert_eq(n, 6);
    cr_assert_eq(out[2], 'u');
    cr_assert_eq(out[5], '?');
    cr_assert_eq(mh__font_text_width("ab", 1), 2 * MH__FONT_ADVANCE - 1);
}

Test(png, round_trip_is_exact_and_deterministic)
{
    struct mh__canvas c, back;
    cr_assert_eq(mh__canvas_init(&c, 37, 19, 0xFFFFFF), 0);
    mh__canvas_text(&c, 1, 1, "Hi 42", 0x112233, 1);
    mh__canvas_hatch(&c, 0, 10, 37, 9, 0xAA3377, 4);
    struct mh__sink a, b;
    mh__sink_init_mem(&a);
    mh__sink_init_mem(&b);
    cr_assert_eq(mh__png_write(&a, &c), 0);
    cr_assert_eq(mh__png_write(&b, &c), 0);
    cr_assert_eq(a.len, b.len);
    cr_assert_eq(memcmp(a.buf, b.buf, a.len), 0);
    cr_assert_eq(mh__png_read(a.buf, a.len, &back), 0);
    cr_assert_eq(back.width, 37);
    cr_assert_eq(memcmp(back.px, c.px, 37 * 19 * 3), 0);
    cr_assert_eq(mh__png_read(a.buf, a.len / 2, &back), MH_EFORMAT);
    cr_assert_eq(mh__png_read("not a png", 9, &back), MH_EFORMAT);
    mh__sink_free(&a);
    mh__sink_free(&b);
    mh__canvas_release(&c);
}
