/* pickle_parse.h - internals shared by the strict pickle reader's files.
 *
 * pickle_read.c owns the opcode loop, the stack, marks, memo and containers;
 * pickle_text.c decodes the protocol-0 text opcodes (INT, LONG, FLOAT,
 * STRING, UNICODE, PUT, GET). Both allocate from the document's arena, which
 * counts every byte against the memory limit (large item arrays have
 * blocks of their own, counted the same way). */
#ifndef MH_IMPORT_PICKLE_PARSE_H
#define MH_IMPORT_PICKLE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "pickle_value.h"

struct mh__arena_block;
struct mh__big;

struct mh_pickle_doc {
    struct mh__arena_block *blocks;
    struct mh__big *bigs; /* large item arrays, one malloc block each */
    uint64_t bytes, max_bytes;
    int per_byte; /* max_bytes is the default derived from the input length */
    struct mh_pv *root;
    int protocol;
};

struct mh__pr {
    const unsigned char *base, *p, *end;
    struct mh_pickle_doc *doc;
    struct mh_pv **stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    struct mh_pv **memo;
    size_t memo_cap, memo_writes;
    uint32_t max_depth;
    size_t op_off; /* offset of the opcode being decoded */
    unsigned char op;
    char *err;
    size_t errlen;
    int code; /* code of the first failure recorded */
    /* None, False, True and one empty tuple, list, dict and set (in the
     * arena, shared). A shared empty list, dict or set stands for a new
     * empty container until it is changed, memoized or duplicated: then
     * mh__pr_own gives that stack slot a node of its own. */
    struct mh_pv *consts[3], *empties[4];
};

/* Records the error message (with offset and opcode) and returns `code`. */
int mh__pr_fail(struct mh__pr *pr, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Arena allocation (8-byte aligned), counted against the limit. NULL on
 * failure after recording MH_ELIMIT or MH_ENOMEM through mh__pr_fail. */
void *mh__pr_alloc(struct mh__pr *pr, size_t size);
struct mh_pv *mh__pr_scalar(struct mh__pr *pr, int type);
int mh__pr_push(struct mh__pr *pr, struct mh_pv *v);
/* Reads `n` raw bytes (NULL + MH_ETRUNCATED recorded if too few). */
const unsigned char *mh__pr_take(struct mh__pr *pr, uint64_t n);

/* Text opcodes: one handler each; they read their line and push a value. */
int mh__pr_text_int(struct mh__pr *pr);     /* INT 'I' */
int mh__pr_text_long(struct mh__pr *pr);    /* LONG 'L' */
int mh__pr_text_float(struct mh__pr *pr);   /* FLOAT 'F' */
int mh__pr_text_string(struct mh__pr *pr);  /* STRING 'S' */
int mh__pr_text_unicode(struct mh__pr *pr); /* UNICODE 'V' */
/* PUT 'p' / GET 'g': the decimal memo index of the line. */
int mh__pr_text_index(struct mh__pr *pr, uint64_t *idx);
/* A str value from Latin-1 bytes (BINSTRING family): copied as UTF-8 if any
 * byte is >= 0x80, else points into the input. */
struct mh_pv *mh__pr_latin1(struct mh__pr *pr, const unsigned char *s, size_t n);
/* 1 if s[0..n) is UTF-8 as Python's decoder with surrogatepass accepts. */
int mh__utf8_valid(const unsigned char *s, size_t n);

#endif
