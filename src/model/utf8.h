/* utf8.h - strings from recordings made safe for every output.
 *
 * Frame names, file names and metadata in a .memhist file are whatever bytes
 * the recorded program had. JSON, pickles and text outputs need well-formed
 * UTF-8 (and text outputs no raw control characters), so each byte that is
 * not part of a well-formed UTF-8 sequence becomes the four characters \xNN
 * (lowercase hex, as Python's "backslashreplace"): reproducible, and the
 * original bytes can be read back from the text. Used by the model's stack
 * labels, the JSON and pickle writers (viz/) and the CLI's text output. */
#ifndef MH_MODEL_UTF8_H
#define MH_MODEL_UTF8_H

#include <stddef.h>

/* Also escape C0 and C1 control characters and DEL (text output). */
#define MH__UTF8_ESC_CONTROL 1u

/* Length (1..4) of the well-formed UTF-8 sequence starting at s (n bytes
 * available), or 0 when s[0] starts none (stray continuation byte, overlong
 * form, surrogate, beyond U+10FFFF, cut short). */
size_t mh__utf8_seq(const unsigned char *s, size_t n);

/* Whether s[0..n) is well-formed UTF-8 with nothing that `flags` escapes. */
int mh__utf8_clean(const char *s, size_t n, unsigned flags);

/* Writes s[0..n) with the bytes described above replaced by \xNN into out
 * (cap bytes, always NUL-terminated when cap > 0; an escape or a sequence
 * that does not fit whole is left out with everything after it). Returns the
 * length the whole result needs, without the NUL (like snprintf). */
size_t mh__utf8_escape(const char *s, size_t n, unsigned flags, char *out, size_t cap);

/* Replaces the NUL-terminated string in buf (cap bytes) by its escaped
 * form, cut to fit. Returns buf. */
char *mh__utf8_escape_in_place(char *buf, size_t cap, unsigned flags);

#endif
