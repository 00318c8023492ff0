/* arrow_schema.c - a table's columns as an ArrowSchema (see arrow_batch.h):
 * a struct field of one child per column, Arrow's format strings for
 * their types, the table's name and schema version as metadata. */
#include <stdio.h>
#include <string.h>

#include "arrow_batch.h"
#include "arrow_node.h"
#include "memhist/error.h"

static const char *format_of(int type)
{
    switch (type) {
    case MH__COL_BOOL:
        return "b";
    case MH__COL_I16:
        return "s";
    case MH__COL_I32:
        return "i";
    case MH__COL_I64:
        return "l";
    case MH__COL_F64:
        return "g";
    case MH__COL_UTF8:
        return "u";
    case MH__COL_NAMES:
        return "c";
    case MH__COL_SID:
        return "i";
    default:
        return "+m";
    }
}

/* map<utf8, utf8>: entries: struct<key: utf8 not null, value: utf8>. */
static int map_schema(struct ArrowSchema *s)
{
    struct ArrowSchema *e = s->children[0];
    int rc = mh__schema_init(e, "+s", "entries", 0, 2, 0, NULL, 0);
    if (rc == 0)
        rc = mh__schema_init(e->children[0], "u", "key", 0, 0, 0, NULL, 0);
    if (rc == 0)
        rc = mh__schema_init(e->children[1], "u", "value", ARROW_FLAG_NULLABLE, 0, 0, NULL, 0);
    return rc;
}

static int column_schema(const struct mh__col_spec *c, struct ArrowSchema *s)
{
    int dict = c->type == MH__COL_NAMES || c->type == MH__COL_SID;
    int rc = mh__schema_init(s, format_of(c->type), c->name, c->nullable ? ARROW_FLAG_NULLABLE : 0,
                             c->type == MH__COL_MAP, dict, NULL, 0);
    if (rc == 0 && dict)
        rc = mh__schema_init(s->dictionary, "u", NULL, 0, 0, 0, NULL, 0);
    if (rc == 0 && c->type == MH__COL_MAP)
        rc = map_schema(s);
    return rc;
}

/* Appends one key/value pair in the metadata encoding of the C data
 * interface (int32 lengths in native order before each string). */
static size_t meta_put(char *buf, size_t at, const char *key, const char *value)
{
    int32_t n = (int32_t)strlen(key);
    memcpy(buf + at, &n, 4);
    memcpy(buf + at + 4, key, (size_t)n);
    at += 4 + (size_t)n;
    n = (int32_t)strlen(value);
    memcpy(buf + at, &n, 4);
    memcpy(buf + at + 4, value, (size_t)n);
    return at + 4 + (size_t)n;
}

int mh__table_schema(const struct mh__table_spec *t, struct ArrowSchema *out)
{
    char meta[256], version[16];
    int32_t pairs = 2;
    snprintf(version, sizeof version, "%d", MH_ARROW_SCHEMA_VERSION);
    memcpy(meta, &pairs, 4);
    size_t len = meta_put(meta, 4, "memhist.schema_version", version);
    len = meta_put(meta, len, "memhist.table", t->name);
    int rc = mh__schema_init(out, "+s", "", 0, (int)t->ncols, 0, meta, len);
    for (size_t i = 0; rc == 0 && i < t->ncols; i++)
        rc = column_schema(&t->cols[i], out->children[i]);
    if (rc < 0 && out->release)
        out->release(out);
    return rc;
}
