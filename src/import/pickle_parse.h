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

#include "pickle_read.h"
#include "pickle_value.h"

struct mh__arena_block;
struct mh__big;
struct mh__kept;
struct mh__prs;

struct mh__pickle_doc {
    struct mh__arena_block *blocks;
    struct mh__big *bigs; /* large item arrays, one malloc block each */
    struct mh__kept *kept; /* streaming: memoized values kept past their batch */
    uint64_t bytes, max_bytes;
    int per_byte; /* max_bytes is the default derived from the input length */
    struct mh__pv *root;
    int protocol;
};

struct mh__pr {
    const unsigned char *base, *p, *end;
    struct mh__pickle_doc *doc;
    struct mh__pv **stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    struct mh__pv **memo;
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
    struct mh__pv *consts[3], *empties[4];
    struct mh__prs *s; /* streaming state (pickle_stream.c); NULL: the whole tree */
};

/* Runs the opcode loop over data[0..len) with streaming state `s` (NULL for
 * the whole tree); as mh__pickle_parse otherwise. */
int mh__pickle_parse_with(const void *data, size_t len, const struct mh__pickle_limits *lim,
                          struct mh__prs *s, struct mh__pickle_doc **out, char *err,
                          size_t errlen);
/* The value of stack slot `at`, given a node of its own if it is a shared
 * empty container. NULL after recording a failure. */
struct mh__pv *mh__pr_own(struct mh__pr *pr, size_t at);
/* Whether p lies in one of the blocks of an arena list. */
int mh__arena_has(const struct mh__arena_block *b, const void *p);
/* Frees an arena list but its newest block, which is emptied and kept;
 * returns the bytes that block holds. */
uint64_t mh__arena_trim(struct mh__arena_block **head);
void mh__arena_free(struct mh__arena_block *b);
void mh__bigs_free(struct mh__big *g);
void mh__kept_free(struct mh__kept *k);
/* Counts `bytes` against the memory limit (0, or the failure recorded);
 * mh__pr_unaccount gives them back. */
int mh__pr_account(struct mh__pr *pr, uint64_t bytes);
void mh__pr_unaccount(struct mh__pr *pr, uint64_t bytes);

/* Streaming hooks (pickle_stream.c), called only while pr->s is set. */
/* Whether allocations go to the batch's arena. */
int mh__prs_transient(const struct mh__prs *s);
struct mh__arena_block **mh__prs_blocks(struct mh__prs *s);
struct mh__big **mh__prs_bigs(struct mh__prs *s);
void mh__prs_count(struct mh__prs *s, uint64_t bytes);
/* A MARK is about to be pushed above stack slot sp-1 (owned by now). */
int mh__prs_mark(struct mh__pr *pr);
/* Items for the list in stack slot `slot`: 1 = not a streamed list (add
 * them), 0 = handed to the sink, or a negative error. */
int mh__prs_fill(struct mh__pr *pr, size_t slot, struct mh__pv **items, size_t n);
/* Refuses (0 = fine) a change to container c made during a batch when c
 * outlives the batch. */
int mh__prs_change(struct mh__pr *pr, const struct mh__pv *c);
int mh__prs_memo_put(struct mh__pr *pr, uint64_t idx, struct mh__pv *v);
int mh__prs_memo_get(struct mh__pr *pr, uint64_t idx);

/* Records the error message (with offset and opcode) and returns `code`. */
int mh__pr_fail(struct mh__pr *pr, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Arena allocation (8-byte aligned), counted against the limit. NULL on
 * failure after recording MH_ELIMIT or MH_ENOMEM through mh__pr_fail. */
void *mh__pr_alloc(struct mh__pr *pr, size_t size);
struct mh__pv *mh__pr_scalar(struct mh__pr *pr, int type);
int mh__pr_push(struct mh__pr *pr, struct mh__pv *v);
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
struct mh__pv *mh__pr_latin1(struct mh__pr *pr, const unsigned char *s, size_t n);
/* 1 if s[0..n) is UTF-8 as Python's decoder with surrogatepass accepts. */
int mh__utf8_valid(const unsigned char *s, size_t n);

#endif
