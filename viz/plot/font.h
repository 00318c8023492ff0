/* font.h - the embedded bitmap font of the PNG renderer.
 *
 * A hand-designed 5x9 pixel ASCII font (32-126): capitals and digits are
 * 7 pixels tall, lowercase letters with descenders use the two rows below
 * the baseline. Each glyph sits in a 6x11 cell (one column and two rows of
 * spacing). The canvas (canvas.c) draws text with it; nothing else reads
 * font files, so output never depends on what the machine has installed. */
#ifndef MH_VIZ_FONT_H
#define MH_VIZ_FONT_H

#define MH__FONT_GLYPH_W 5
#define MH_FONT_GLYPH_H 9
#define MH__FONT_ADVANCE 6   /* horizontal distance between glyphs */
#define MH__FONT_LINE 11     /* distance between text lines */
#define MH__FONT_CAP 7       /* rows above the baseline */

/* Rows of one glyph: MH_FONT_GLYPH_H strings of MH__FONT_GLYPH_W characters,
 * '#' for a set pixel. Characters outside 32-126 give the glyph of '?'. */
const char *const *mh__font_glyph(int ch);

/* Decodes the next character of UTF-8 text into a printable ASCII code:
 * 'µ' (U+00B5) becomes 'u', other non-ASCII characters become '?'. Advances
 * *s past the bytes it used; returns 0 at the end of the string. */
int mh__font_next_char(const char **s);

/* Width in pixels of `text` drawn at integer `scale` (>= 1). */
int mh__font_text_width(const char *text, int scale);

#endif
