/* png_out.h - encoding a canvas as a PNG file.
 *
 * The one place that includes <png.h>. The encoding is deterministic: no
 * time chunk, no text chunks, fixed compression settings, so the same canvas
 * always gives the same bytes (the golden tests rely on it). */
#ifndef MH_VIZ_PNG_OUT_H
#define MH_VIZ_PNG_OUT_H

#include "canvas.h"
#include "sink.h"

/* Writes `c` as an 8-bit RGB PNG to `out`. Returns 0, MH_ENOMEM, MH_EIO
 * (the sink failed) or MH_EFORMAT (libpng refused). */
int mh__png_write(struct mh__sink *out, const struct mh__canvas *c);

/* Decodes an 8-bit RGB or RGBA PNG from memory into a new canvas (alpha is
 * dropped). Used by tests and tools that check images; MH_EFORMAT when the
 * data is not such a PNG. */
int mh__png_read(const void *data, size_t len, struct mh__canvas *out);

#endif
