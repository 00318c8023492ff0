/* json_read.h - a compact, safe JSON reader over a buffer in memory.
 *
 * Used to read torch.profiler (Kineto) traces for `memhist trace --into`.
 * It validates a whole document once (strict RFC 8259 grammar, with limits on
 * size and nesting depth) and then lets callers walk it as spans of the
 * original bytes: no tree is built, so re-emitting a value is a copy of its
 * bytes. Never allocates; never reads outside the buffer. */
#ifndef MH_VIZ_JSON_READ_H
#define MH_VIZ_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

enum mh__jr_type { MH__JR_NULL, MH__JR_BOOL, MH__JR_NUMBER, MH__JR_STRING, MH__JR_ARRAY, MH__JR_OBJECT };

/* A value: its type and its bytes [off, off + len) in the document (strings
 * include their quotes). */
struct mh__jr_value {
    enum mh__jr_type type;
    size_t off, len;
};

struct mh__jr_doc {
    const char *buf;
    size_t len;
    int max_depth;
};

#define MH__JR_DEFAULT_MAX_DEPTH 64
#define MH__JR_DEFAULT_MAX_BYTES ((size_t)4 << 30)

/* Validates `buf` as one JSON value (surrounding whitespace allowed).
 * max_depth / max_bytes of 0 mean the defaults. Returns 0 and the root, or
 * MH_EFORMAT / MH_ELIMIT with "<problem> at byte N" in err. */
int mh__jr_parse(struct mh__jr_doc *doc, const char *buf, size_t len, int max_depth,
                 size_t max_bytes, struct mh__jr_value *root, char *err, size_t errlen);

/* Iterates an array's elements or an object's members (`key` may be NULL;
 * it is unset for arrays). *pos starts at 0. Returns 1 with the next item,
 * 0 at the end. Only for values of a parsed document. */
int mh__jr_next(const struct mh__jr_doc *doc, const struct mh__jr_value *container, size_t *pos,
                struct mh__jr_value *key, struct mh__jr_value *val);
/* The member `key` of an object: 1 if found. */
int mh__jr_find(const struct mh__jr_doc *doc, const struct mh__jr_value *obj, const char *key,
                struct mh__jr_value *out);

/* 1 if the string value equals `s` (after unescaping). */
int mh__jr_string_eq(const struct mh__jr_doc *doc, const struct mh__jr_value *v, const char *s);
/* Unescaped string into out (truncated, always terminated); returns the full
 * length or a negative error if `v` is not a string. */
int mh__jr_string(const struct mh__jr_doc *doc, const struct mh__jr_value *v, char *out,
                  size_t outlen);
/* Numbers: as a double, or as an exact non-negative integer (digits only,
 * no fraction/exponent, fits 64 bits). Return 0 or MH_EINVAL. */
int mh__jr_double(const struct mh__jr_doc *doc, const struct mh__jr_value *v, double *out);
int mh__jr_u64(const struct mh__jr_doc *doc, const struct mh__jr_value *v, uint64_t *out);

#endif
