/* arrow_batch.h - the columns of a table and the record batches built from
 * them, as the Arrow C data interface lays them out (memhist/arrow.h).
 *
 * A table is a list of column specs (tables.c lists memhist's); a batch
 * builder holds one batch's buffers, rows are filled column by column
 * (a column left unset in a row is null) and a finished batch is handed
 * out as an ArrowArray whose release frees its buffers: the consumer reads
 * them where they are. Internal to src/export. */
#ifndef MH_EXPORT_ARROW_BATCH_H
#define MH_EXPORT_ARROW_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/arrow.h"
#include "memhist/reader.h"

enum mh__col_type {
    MH__COL_BOOL,
    MH__COL_I16,
    MH__COL_I32,
    MH__COL_I64,
    MH__COL_F64,
    MH__COL_UTF8,
    MH__COL_NAMES, /* dictionary<int8, utf8> over a fixed list of names */
    MH__COL_SID,   /* dictionary<int32, utf8> over the reader's strings, by string id */
    MH__COL_MAP,   /* map<utf8, utf8> */
};

struct mh__col_spec {
    const char *name;
    int type; /* enum mh__col_type */
    int nullable;
    const char *const *names; /* MH__COL_NAMES: the dictionary (a batch may set another) */
    size_t nnames;
};

struct mh__table_spec {
    const char *name;
    const struct mh__col_spec *cols;
    size_t ncols;
};

/* The schema of `t`: a struct of its columns (the caller releases it). */
int mh__table_schema(const struct mh__table_spec *t, struct ArrowSchema *out);

struct mh__batch;

/* A builder of batches of at most `cap` rows of table `t`; the reader (borrowed)
 * gives the text of MH__COL_SID columns. */
int mh__batch_new(const struct mh__table_spec *t, size_t cap, const struct mh_reader *r,
                  struct mh__batch **out);
void mh__batch_free(struct mh__batch *b);
/* Sets the dictionary of MH__COL_NAMES column `col` for the batches from now
 * on (borrowed for the builder's life). */
void mh__batch_names(struct mh__batch *b, size_t col, const char *const *names, size_t n);

size_t mh__batch_rows(const struct mh__batch *b);
int mh__batch_full(const struct mh__batch *b);

/* Values of column `col` in the current row. */
void mh__batch_i64(struct mh__batch *b, size_t col, int64_t v);
void mh__batch_f64(struct mh__batch *b, size_t col, double v);
/* MH__COL_NAMES: the index of the name; MH__COL_BOOL: 0 or 1. */
void mh__batch_code(struct mh__batch *b, size_t col, int v);
/* MH__COL_SID: a string id of the reader; 0 (none) leaves it null. */
int mh__batch_sid(struct mh__batch *b, size_t col, uint32_t sid);
/* MH__COL_UTF8: NULL leaves it null. */
int mh__batch_text(struct mh__batch *b, size_t col, const char *s);
/* MH__COL_MAP: one more entry of the current row's map (key NULL: none, but
 * the map is not null). */
int mh__batch_map_add(struct mh__batch *b, size_t col, const char *key, const char *value);
/* Ends the current row; MH_EFULL if the batch is full. */
int mh__batch_row_end(struct mh__batch *b);

/* Hands the rows so far out as one struct array (the caller releases it)
 * and starts an empty batch. */
int mh__batch_finish(struct mh__batch *b, struct ArrowArray *out);

#endif
