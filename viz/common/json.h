/* json.h - a small streaming JSON writer over a sink.
 *
 * Used by `memhist report --json`, the Chrome trace writer and the other JSON
 * outputs. It inserts commas and escapes strings; callers only say what comes
 * next. Pretty output indents nested containers by two spaces. */
#ifndef MH_VIZ_JSON_H
#define MH_VIZ_JSON_H

#include <stdint.h>

#include "sink.h"

#define MH__JSON_MAX_DEPTH 64

struct mh__json {
    struct mh__sink *sink;
    int pretty;
    int depth;
    int count[MH__JSON_MAX_DEPTH]; /* values written at each depth */
    int after_key;
};

void mh__json_init(struct mh__json *j, struct mh__sink *sink, int pretty);
void mh__json_begin_object(struct mh__json *j);
void mh__json_end_object(struct mh__json *j);
void mh__json_begin_array(struct mh__json *j);
void mh__json_end_array(struct mh__json *j);
/* Object key; the next call writes its value. */
void mh__json_key(struct mh__json *j, const char *key);
void mh__json_string(struct mh__json *j, const char *s); /* NULL writes null */
void mh__json_int(struct mh__json *j, int64_t v);
void mh__json_uint(struct mh__json *j, uint64_t v);
/* Finite doubles with up to `decimals` decimals; NaN/inf become null. */
void mh__json_double(struct mh__json *j, double v, int decimals);
void mh__json_bool(struct mh__json *j, int v);
void mh__json_null(struct mh__json *j);
/* Writes `text` verbatim as one value (it must be valid JSON). */
void mh__json_raw(struct mh__json *j, const char *text);
/* Shorthands for a key followed by a value. */
void mh__json_kv_string(struct mh__json *j, const char *key, const char *s);
void mh__json_kv_int(struct mh__json *j, const char *key, int64_t v);
void mh__json_kv_uint(struct mh__json *j, const char *key, uint64_t v);
void mh__json_kv_double(struct mh__json *j, const char *key, double v, int decimals);
void mh__json_kv_bool(struct mh__json *j, const char *key, int v);
/* Writes the JSON string escape of `s` (with quotes) to any sink. */
void mh__json_write_escaped(struct mh__sink *sink, const char *s);

#endif
