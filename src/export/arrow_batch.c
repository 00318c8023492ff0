/* arrow_batch.c - the batch builder (see arrow_batch.h): per column a
 * validity bitmap and a values buffer of the batch's capacity, string bytes
 * that grow, and for dictionary columns the batch's dictionary (the names
 * list, or the distinct string ids the batch used, found through a small
 * open-addressing table). Finishing a batch moves the buffers into the
 * ArrowArray handed out and allocates fresh ones. */
#include <stdlib.h>
#include <string.h>

#include "arrow_batch.h"
#include "arrow_node.h"
#include "grow.h"
#include "memhist/error.h"

/* Strings: int32 offsets (one per row plus one) and their bytes. */
struct strs {
    int32_t *off;
    char *data;
    size_t len, cap;
};

struct col {
    const struct mh__col_spec *spec;
    uint8_t *valid;
    void *values;             /* fixed width values, or NAMES/SID indices */
    struct strs s;            /* UTF8; MAP: the keys */
    const char *const *names; /* NAMES */
    size_t nnames;
    uint32_t *sids; /* SID: the dictionary's string ids */
    size_t nsids, capsids;
    uint32_t *slot_sid; /* SID: string id -> dictionary index table */
    int32_t *slot_idx;
    size_t nslots;
    int32_t *entries;            /* MAP: offsets into the entries, one per row plus one */
    struct strs vals;            /* MAP: the values (never null) */
    size_t nentries, capentries; /* MAP */
};

struct mh__batch {
    const struct mh__table_spec *t;
    const struct mh_reader *reader;
    size_t cap, rows;
    struct col *cols;
};

static size_t width_of(int type)
{
    switch (type) {
    case MH__COL_I16:
        return 2;
    case MH__COL_I32:
    case MH__COL_SID:
        return 4;
    case MH__COL_I64:
    case MH__COL_F64:
        return 8;
    case MH__COL_NAMES:
        return 1;
    default:
        return 0; /* BOOL (bits), UTF8 and MAP (offsets) */
    }
}

static int strs_alloc(struct strs *s, size_t cap)
{
    s->off = calloc(cap + 1, sizeof *s->off);
    s->data = NULL;
    s->len = s->cap = 0;
    return s->off ? 0 : MH_ENOMEM;
}

static int strs_put(struct strs *s, size_t row, const char *text)
{
    size_t n = strlen(text);
    if (s->len + n > INT32_MAX)
        return MH_ELIMIT;
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n)
            cap *= 2;
        char *d = realloc(s->data, cap);
        if (!d)
            return MH_ENOMEM;
        s->data = d;
        s->cap = cap;
    }
    memcpy(s->data + s->len, text, n);
    s->len += n;
    s->off[row + 1] = (int32_t)s->len;
    return 0;
}

/* Fresh buffers of column c for a batch of `cap` rows. */
static int col_alloc(struct col *c, size_t cap)
{
    int type = c->spec->type;
    c->valid = calloc((cap + 7) / 8 + 1, 1);
    c->values = type == MH__COL_BOOL ? calloc((cap + 7) / 8 + 1, 1)
                : width_of(type)    ? calloc(cap, width_of(type))
                                    : NULL;
    int rc = c->valid && (c->values || !(type == MH__COL_BOOL || width_of(type))) ? 0 : MH_ENOMEM;
    if (rc == 0 && (type == MH__COL_UTF8 || type == MH__COL_MAP))
        rc = strs_alloc(&c->s, type == MH__COL_MAP ? 16 : cap);
    if (rc == 0 && type == MH__COL_MAP) {
        c->entries = calloc(cap + 1, sizeof *c->entries);
        c->nentries = 0;
        c->capentries = 16;
        rc = c->entries ? strs_alloc(&c->vals, 16) : MH_ENOMEM;
    }
    c->nsids = 0;
    if (c->nslots)
        memset(c->slot_sid, 0, c->nslots * sizeof *c->slot_sid);
    return rc;
}

static void col_free_buffers(struct col *c)
{
    free(c->valid);
    free(c->values);
    free(c->s.off);
    free(c->s.data);
    free(c->entries);
    free(c->vals.off);
    free(c->vals.data);
    c->valid = c->values = NULL;
    c->s.off = c->vals.off = c->entries = NULL;
    c->s.data = c->vals.data = NULL;
}

static int batch_alloc(struct mh__batch *b)
{
    int rc = 0;
    b->rows = 0;
    for (size_t i = 0; i < b->t->ncols && rc == 0; i++)
        rc = col_alloc(&b->cols[i], b->cap);
    return rc;
}

int mh__batch_new(const struct mh__table_spec *t, size_t cap, const struct mh_reader *r,
                  struct mh__batch **out)
{
    struct mh__batch *b = calloc(1, sizeof *b);
    *out = NULL;
    if (!b || !(b->cols = calloc(t->ncols, sizeof *b->cols))) {
        free(b);
        return MH_ENOMEM;
    }
    b->t = t;
    b->reader = r;
    b->cap = cap ? cap : 1;
    for (size_t i = 0; i < t->ncols; i++) {
        b->cols[i].spec = &t->cols[i];
        b->cols[i].names = t->cols[i].names;
        b->cols[i].nnames = t->cols[i].nnames;
    }
    int rc = batch_alloc(b);
    if (rc < 0) {
        mh__batch_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

void mh__batch_free(struct mh__batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->t->ncols; i++) {
        col_free_buffers(&b->cols[i]);
        free(b->cols[i].sids);
        free(b->cols[i].slot_sid);
        free(b->cols[i].slot_idx);
    }
    free(b->cols);
    free(b);
}

void mh__batch_names(struct mh__batch *b, size_t col, const char *const *names, size_t n)
{
    b->cols[col].names = names;
    b->cols[col].nnames = n;
}

size_t mh__batch_rows(const struct mh__batch *b)
{
    return b->rows;
}

int mh__batch_full(const struct mh__batch *b)
{
    return b->rows >= b->cap;
}

static inline void set_valid(struct col *c, size_t row)
{
    c->valid[row >> 3] |= (uint8_t)(1u << (row & 7));
}

void mh__batch_i64(struct mh__batch *b, size_t col, int64_t v)
{
    struct col *c = &b->cols[col];
    size_t row = b->rows;
    switch (c->spec->type) {
    case MH__COL_I16:
        ((int16_t *)c->values)[row] = (int16_t)v;
        break;
    case MH__COL_I32:
        ((int32_t *)c->values)[row] = (int32_t)v;
        break;
    default:
        ((int64_t *)c->values)[row] = v;
        break;
    }
    set_valid(c, row);
}

void mh__batch_f64(struct mh__batch *b, size_t col, double v)
{
    struct col *c = &b->cols[col];
    ((double *)c->values)[b->rows] = v;
    set_valid(c, b->rows);
}

void mh__batch_code(struct mh__batch *b, size_t col, int v)
{
    struct col *c = &b->cols[col];
    size_t row = b->rows;
    if (c->spec->type == MH__COL_BOOL) {
        if (v)
            ((uint8_t *)c->values)[row >> 3] |= (uint8_t)(1u << (row & 7));
    } else {
        ((int8_t *)c->values)[row] = (int8_t)v;
    }
    set_valid(c, row);
}

/* Doubles the string id table (a power of two) and enters the ids again. */
static int sid_rehash(struct col *c)
{
    size_t n = c->nslots ? c->nslots * 2 : 256;
    uint32_t *keys = calloc(n, sizeof *keys);
    int32_t *idx = calloc(n, sizeof *idx);
    if (!keys || !idx) {
        free(keys);
        free(idx);
        return MH_ENOMEM;
    }
    for (size_t i = 0; i < c->nsids; i++) {
        size_t h = (c->sids[i] * 2654435761u) & (n - 1);
        while (keys[h])
            h = (h + 1) & (n - 1);
        keys[h] = c->sids[i];
        idx[h] = (int32_t)i;
    }
    free(c->slot_sid);
    free(c->slot_idx);
    c->slot_sid = keys;
    c->slot_idx = idx;
    c->nslots = n;
    return 0;
}

/* The dictionary index of string id `sid` in this batch, added if new. */
static int sid_index(struct col *c, uint32_t sid, int32_t *out)
{
    if ((c->nsids + 1) * 2 > c->nslots && sid_rehash(c) < 0)
        return MH_ENOMEM;
    size_t h = (sid * 2654435761u) & (c->nslots - 1);
    while (c->slot_sid[h] && c->slot_sid[h] != sid)
        h = (h + 1) & (c->nslots - 1);
    if (!c->slot_sid[h]) {
        if (MH__GROW(c->sids, c->nsids, c->capsids, 64) < 0)
            return MH_ENOMEM;
        c->slot_sid[h] = sid;
        c->slot_idx[h] = (int32_t)c->nsids;
        c->sids[c->nsids++] = sid;
    }
    *out = c->slot_idx[h];
    return 0;
}

int mh__batch_sid(struct mh__batch *b, size_t col, uint32_t sid)
{
    struct col *c = &b->cols[col];
    int32_t idx;
    if (sid == 0 || !mh_reader_string(b->reader, sid))
        return 0;
    int rc = sid_index(c, sid, &idx);
    if (rc < 0)
        return rc;
    ((int32_t *)c->values)[b->rows] = idx;
    set_valid(c, b->rows);
    return 0;
}

int mh__batch_text(struct mh__batch *b, size_t col, const char *s)
{
    struct col *c = &b->cols[col];
    if (!s)
        return 0;
    int rc = strs_put(&c->s, b->rows, s);
    if (rc == 0)
        set_valid(c, b->rows);
    return rc;
}

int mh__batch_map_add(struct mh__batch *b, size_t col, const char *key, const char *value)
{
    struct col *c = &b->cols[col];
    if (!key) { /* the row's map is empty, not null */
        set_valid(c, b->rows);
        return 0;
    }
    if (c->nentries + 1 >= c->capentries) {
        size_t cap = c->capentries * 2;
        int32_t *ko = realloc(c->s.off, (cap + 1) * sizeof *ko);
        int32_t *vo = ko ? realloc(c->vals.off, (cap + 1) * sizeof *vo) : NULL;
        if (ko)
            c->s.off = ko;
        if (!vo)
            return MH_ENOMEM;
        c->vals.off = vo;
        c->capentries = cap;
    }
    int rc = strs_put(&c->s, c->nentries, key);
    if (rc == 0)
        rc = strs_put(&c->vals, c->nentries, value ? value : "");
    if (rc < 0)
        return rc;
    c->nentries++;
    set_valid(c, b->rows);
    return 0;
}

/* Carries the offsets of string and map columns over an ended row. */
static void end_offsets(struct mh__batch *b, size_t row)
{
    for (size_t i = 0; i < b->t->ncols; i++) {
        struct col *c = &b->cols[i];
        if (c->spec->type == MH__COL_UTF8 && !(c->valid[row >> 3] & (1u << (row & 7))))
            c->s.off[row + 1] = (int32_t)c->s.len;
        else if (c->spec->type == MH__COL_MAP)
            c->entries[row + 1] = (int32_t)c->nentries;
    }
}

int mh__batch_row_end(struct mh__batch *b)
{
    if (b->rows >= b->cap)
        return MH_EFULL;
    end_offsets(b, b->rows);
    b->rows++;
    return 0;
}

/* ---- finishing ---------------------------------------------------------- */

static int64_t nulls_of(const uint8_t *valid, size_t rows)
{
    int64_t set = 0;
    for (size_t i = 0; i < rows / 8; i++)
        set += __builtin_popcount(valid[i]);
    for (size_t i = rows / 8 * 8; i < rows; i++)
        set += (valid[i >> 3] >> (i & 7)) & 1;
    return (int64_t)rows - set;
}

/* A utf8 array of `n` strings (copied). */
static int utf8_array(struct ArrowArray *a, const char *const *text, size_t n)
{
    struct strs s;
    int rc = strs_alloc(&s, n);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = strs_put(&s, i, text[i] ? text[i] : "");
    if (rc == 0 && !s.data)
        s.data = malloc(1);
    if (rc < 0 || !s.data) {
        free(s.off);
        free(s.data);
        return MH_ENOMEM;
    }
    void *bufs[3] = {NULL, s.off, s.data};
    return mh__array_init(a, (int64_t)n, 0, 3, bufs, 0, 0);
}

static int sid_dictionary(const struct mh__batch *b, const struct col *c, struct ArrowArray *d)
{
    const char **text = malloc((c->nsids ? c->nsids : 1) * sizeof *text);
    if (!text)
        return MH_ENOMEM;
    for (size_t i = 0; i < c->nsids; i++)
        text[i] = mh_reader_string(b->reader, c->sids[i]);
    int rc = utf8_array(d, text, c->nsids);
    free(text);
    return rc;
}

/* The string buffers of `s` as a utf8 array of `n` rows with `valid`. */
static int strs_array(struct ArrowArray *a, struct strs *s, size_t n, void *valid, int64_t nulls)
{
    if (!s->data && !(s->data = malloc(1)))
        return MH_ENOMEM;
    void *bufs[3] = {valid, s->off, s->data};
    int rc = mh__array_init(a, (int64_t)n, nulls, 3, bufs, 0, 0);
    s->off = NULL;
    s->data = NULL;
    return rc;
}

static int map_array(struct col *c, size_t rows, void *valid, int64_t nulls, struct ArrowArray *a)
{
    void *bufs[2] = {valid, c->entries};
    int rc = mh__array_init(a, (int64_t)rows, nulls, 2, bufs, 1, 0);
    c->entries = NULL;
    struct ArrowArray *e = a->children[0];
    if (rc == 0)
        rc = mh__array_init(e, (int64_t)c->nentries, 0, 1, (void *[]){NULL}, 2, 0);
    if (rc == 0)
        rc = strs_array(e->children[0], &c->s, c->nentries, NULL, 0);
    if (rc == 0)
        rc = strs_array(e->children[1], &c->vals, c->nentries, NULL, 0);
    return rc;
}

static int col_array(struct mh__batch *b, struct col *c, struct ArrowArray *a)
{
    size_t rows = b->rows;
    int64_t nulls = nulls_of(c->valid, rows);
    void *valid = nulls ? c->valid : NULL;
    int type = c->spec->type, rc;
    if (!nulls)
        free(c->valid);
    if (type == MH__COL_UTF8) {
        rc = strs_array(a, &c->s, rows, valid, nulls);
    } else if (type == MH__COL_MAP) {
        rc = map_array(c, rows, valid, nulls, a);
    } else {
        int dict = type == MH__COL_NAMES || type == MH__COL_SID;
        void *bufs[2] = {valid, c->values};
        rc = mh__array_init(a, (int64_t)rows, nulls, 2, bufs, 0, dict);
        if (rc == 0 && type == MH__COL_NAMES)
            rc = utf8_array(a->dictionary, c->names, c->nnames);
        else if (rc == 0 && type == MH__COL_SID)
            rc = sid_dictionary(b, c, a->dictionary);
    }
    c->valid = NULL;
    c->values = NULL;
    return rc;
}

int mh__batch_finish(struct mh__batch *b, struct ArrowArray *out)
{
    int rc = mh__array_init(out, (int64_t)b->rows, 0, 1, (void *[]){NULL}, (int)b->t->ncols, 0);
    for (size_t i = 0; i < b->t->ncols; i++) {
        if (rc == 0)
            rc = col_array(b, &b->cols[i], out->children[i]);
        col_free_buffers(&b->cols[i]);
    }
    if (rc < 0 && out->release)
        out->release(out);
    int arc = batch_alloc(b);
    return rc < 0 ? rc : arc;
}
