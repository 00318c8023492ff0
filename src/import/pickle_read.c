/* pickle_read.c - the strict pickle reader's opcode loop (see pickle_read.h).
 *
 * A flat loop over opcodes with an explicit value stack, a mark stack and a
 * memo, as Python's unpickler has, but building only pickle_value.h nodes.
 * Safety rules beyond Python's:
 *  - opcodes that import or call are refused before anything else happens;
 *  - a container that was placed inside another is frozen: later changes to
 *    it (possible only through memo references) are refused, which rules out
 *    cycles, so consumers may walk the tree without cycle checks;
 *  - container nesting and open marks are bounded by max_depth, memory by
 *    max_bytes (arena, stack and memo all count; by default 64 MiB plus 16
 *    bytes per input byte), memo indexes by how many memo writes happened;
 *  - empty containers cost no node until they are changed, memoized or
 *    duplicated (shared empties), so runs of empty lists stay small. */
#include "pickle_read.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pickle_parse.h"

struct mh__arena_block {
    struct mh__arena_block *next;
    size_t used, cap;
    _Alignas(8) unsigned char data[];
};

/* Item arrays of BIG_ITEMS slots or more live in blocks of their own that
 * realloc grows in place, so a growing container leaves no copies behind. */
struct mh__big {
    struct mh__big *prev, *next;
    struct mh__pv *items[];
};

#define ARENA_CHUNK (1u << 20)
#define BIG_ITEMS 8192u
#define MEMO_SLACK 65536u
#define LIMIT_FLOOR (64ull << 20)
#define LIMIT_PER_BYTE 16u

int mh__pr_fail(struct mh__pr *pr, int code, const char *fmt, ...)
{
    if (pr->code)
        return code; /* keep the first message */
    pr->code = code;
    if (pr->err && pr->errlen) {
        const char *name = mh__pickle_opcode_name(pr->op);
        int n = snprintf(pr->err, pr->errlen, "offset %zu: ", pr->op_off);
        if (n >= 0 && (size_t)n < pr->errlen && name)
            n += snprintf(pr->err + n, pr->errlen - (size_t)n, "%s: ", name);
        if (n >= 0 && (size_t)n < pr->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(pr->err + n, pr->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

int mh__pr_account(struct mh__pr *pr, uint64_t bytes)
{
    struct mh__pickle_doc *d = pr->doc;
    if (bytes > d->max_bytes || d->bytes > d->max_bytes - bytes)
        return mh__pr_fail(pr, MH_ELIMIT, "reading needs more than %llu MiB of memory%s",
                           (unsigned long long)(d->max_bytes >> 20),
                           d->per_byte ? " (64 MiB + 16 bytes per input byte)" : "");
    d->bytes += bytes;
    return 0;
}

void mh__pr_unaccount(struct mh__pr *pr, uint64_t bytes)
{
    pr->doc->bytes -= bytes < pr->doc->bytes ? bytes : pr->doc->bytes;
}

int mh__arena_has(const struct mh__arena_block *b, const void *p)
{
    for (; b; b = b->next)
        if ((const unsigned char *)p >= b->data && (const unsigned char *)p < b->data + b->cap)
            return 1;
    return 0;
}

void mh__arena_free(struct mh__arena_block *b)
{
    while (b) {
        struct mh__arena_block *next = b->next;
        free(b);
        b = next;
    }
}

uint64_t mh__arena_trim(struct mh__arena_block **head)
{
    if (!*head)
        return 0;
    mh__arena_free((*head)->next);
    (*head)->next = NULL;
    (*head)->used = 0;
    return sizeof **head + (*head)->cap;
}

void *mh__pr_alloc(struct mh__pr *pr, size_t size)
{
    size = (size + 7) & ~(size_t)7;
    int tr = pr->s && mh__prs_transient(pr->s);
    struct mh__arena_block **head = tr ? mh__prs_blocks(pr->s) : &pr->doc->blocks;
    struct mh__arena_block *b = *head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
        if (mh__pr_account(pr, cap + sizeof *b))
            return NULL;
        if (tr)
            mh__prs_count(pr->s, cap + sizeof *b);
        b = malloc(sizeof *b + cap);
        if (!b) {
            mh__pr_fail(pr, MH_ENOMEM, "out of memory");
            return NULL;
        }
        b->used = 0;
        b->cap = cap;
        b->next = *head;
        *head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

struct mh__pv *mh__pr_scalar(struct mh__pr *pr, int type)
{
    struct mh__pv *v = mh__pr_alloc(pr, sizeof *v);
    if (v) {
        memset(v, 0, sizeof *v);
        v->type = (uint8_t)type;
    }
    return v;
}

/* Grows a malloc'ed array to hold `need` elements, counting the growth. */
static int grow(struct mh__pr *pr, void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 256;
    while (ncap < need)
        ncap *= 2;
    if (mh__pr_account(pr, (uint64_t)(ncap - *cap) * elem))
        return pr->code;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return mh__pr_fail(pr, MH_ENOMEM, "out of memory");
    *arr = p;
    *cap = ncap;
    return 0;
}

int mh__pr_push(struct mh__pr *pr, struct mh__pv *v)
{
    if (!v)
        return pr->code ? pr->code : MH_ENOMEM; /* the failure was recorded */
    if (pr->sp == pr->scap && grow(pr, (void **)&pr->stack, &pr->scap, pr->sp + 1, sizeof v))
        return pr->code;
    pr->stack[pr->sp++] = v;
    return 0;
}

const unsigned char *mh__pr_take(struct mh__pr *pr, uint64_t n)
{
    if (n > (uint64_t)(pr->end - pr->p)) {
        mh__pr_fail(pr, MH_ETRUNCATED, "needs %llu bytes, %zu left", (unsigned long long)n,
                    (size_t)(pr->end - pr->p));
        return NULL;
    }
    const unsigned char *s = pr->p;
    pr->p += n;
    return s;
}

static size_t mark_base(const struct mh__pr *pr)
{
    return pr->nmarks ? pr->marks[pr->nmarks - 1] : 0;
}

static struct mh__pv *pop(struct mh__pr *pr)
{
    if (pr->sp <= mark_base(pr)) {
        mh__pr_fail(pr, MH_EFORMAT, "stack underflow");
        return NULL;
    }
    return pr->stack[--pr->sp];
}

static struct mh__pv *top(struct mh__pr *pr)
{
    if (pr->sp <= mark_base(pr)) {
        mh__pr_fail(pr, MH_EFORMAT, "stack underflow");
        return NULL;
    }
    return pr->stack[pr->sp - 1];
}

/* Starts of the items since the last mark; pops the mark. */
static int pop_mark(struct mh__pr *pr, size_t *start)
{
    if (!pr->nmarks)
        return mh__pr_fail(pr, MH_EFORMAT, "no MARK open");
    *start = pr->marks[--pr->nmarks];
    return 0;
}

/* The shared empty container of a type, or NULL for other types. */
static struct mh__pv *shared_empty(struct mh__pr *pr, int type)
{
    return type >= MH__PV_TUPLE && type <= MH__PV_SET ? pr->empties[type - MH__PV_TUPLE] : NULL;
}

/* (pickle_parse.h) Tuples never change, so they stay shared. */
struct mh__pv *mh__pr_own(struct mh__pr *pr, size_t at)
{
    struct mh__pv *v = pr->stack[at];
    if (v->type == MH__PV_TUPLE || v != shared_empty(pr, v->type))
        return v;
    struct mh__pv *c = mh__pr_scalar(pr, v->type);
    if (c)
        pr->stack[at] = c;
    return c;
}

/* Makes `child` part of container `c`: checks nesting, freezes the child. */
static int adopt(struct mh__pr *pr, struct mh__pv *c, struct mh__pv *child)
{
    if (child == c)
        return mh__pr_fail(pr, MH_EFORMAT, "container placed inside itself");
    if (child->type >= MH__PV_TUPLE) {
        if (child->height + 1u > pr->max_depth)
            return mh__pr_fail(pr, MH_ELIMIT, "containers nested deeper than %u", pr->max_depth);
        child->frozen = 1;
        if (child->height + 1u > c->height)
            c->height = (uint8_t)(child->height + 1u);
    }
    return 0;
}

/* The value stack from position `at`; NULL while the stack was never
 * allocated (nothing pushed yet), so no offset is applied to a null pointer. */
static struct mh__pv **stack_at(struct mh__pr *pr, size_t at)
{
    return pr->stack ? pr->stack + at : NULL;
}

/* Grows an item array of `cap` slots (in the arena, or big) to a big one of
 * `ncap`; a big array keeps its items, an arena one is left to the caller
 * to copy. NULL after recording a failure. */
static struct mh__pv **big_items(struct mh__pr *pr, struct mh__pv **old, size_t cap, size_t ncap)
{
    int tr = pr->s && mh__prs_transient(pr->s);
    struct mh__big **head = tr ? mh__prs_bigs(pr->s) : &pr->doc->bigs;
    int was_big = cap >= BIG_ITEMS;
    uint64_t more = (uint64_t)(ncap - (was_big ? cap : 0)) * sizeof *old;
    if (mh__pr_account(pr, more))
        return NULL;
    if (tr)
        mh__prs_count(pr->s, more);
    struct mh__big *b =
        was_big ? (struct mh__big *)(void *)((char *)old - offsetof(struct mh__big, items)) : NULL;
    struct mh__big *nb = realloc(b, sizeof *nb + ncap * sizeof *old);
    if (!nb) {
        mh__pr_fail(pr, MH_ENOMEM, "out of memory");
        return NULL;
    }
    if (!was_big) {
        nb->prev = NULL;
        nb->next = *head;
    }
    if (nb->next)
        nb->next->prev = nb;
    if (nb->prev)
        nb->prev->next = nb;
    else
        *head = nb;
    return nb->items;
}

/* Appends items[0..n) to container c (growing its array). */
static int add_items(struct mh__pr *pr, struct mh__pv *c, struct mh__pv **items, size_t n)
{
    if (c->frozen)
        return mh__pr_fail(pr, MH_EFORMAT, "%s changed after it was placed in another container",
                           mh__pv_type_name(c));
    if (pr->s && mh__prs_change(pr, c))
        return pr->code;
    size_t per = c->type == MH__PV_DICT ? 2 : 1;
    size_t have = (size_t)c->n * per, cap = have;
    /* capacity is implicit: the next power of two at or above the count */
    if (have) {
        cap = 1;
        while (cap < have)
            cap *= 2;
    }
    if (have + n > UINT32_MAX)
        return mh__pr_fail(pr, MH_ELIMIT, "container with more than 2^32 items");
    if (have + n > cap) {
        size_t ncap = cap ? cap : 1;
        while (ncap < have + n)
            ncap *= 2;
        struct mh__pv **arr = ncap >= BIG_ITEMS ? big_items(pr, c->u.items, cap, ncap)
                                               : mh__pr_alloc(pr, ncap * sizeof *arr);
        if (!arr)
            return pr->code;
        if (have && cap < BIG_ITEMS)
            memcpy(arr, c->u.items, have * sizeof *arr);
        c->u.items = arr;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = adopt(pr, c, items[i]);
        if (rc)
            return rc;
        c->u.items[have + i] = items[i];
    }
    c->n = (uint32_t)((have + n) / per);
    return 0;
}

static struct mh__pv *new_container(struct mh__pr *pr, int type, struct mh__pv **items, size_t n)
{
    if (!n && shared_empty(pr, type))
        return shared_empty(pr, type);
    struct mh__pv *c = mh__pr_scalar(pr, type);
    if (c && n && add_items(pr, c, items, n))
        return NULL;
    return c;
}

/* SETITEMS / APPENDS / ADDITEMS: items since the mark go into the container
 * below the mark. */
static int fill_from_mark(struct mh__pr *pr, int type)
{
    size_t start = 0;
    int rc = pop_mark(pr, &start);
    if (rc)
        return rc;
    if (start <= mark_base(pr) || start == 0)
        return mh__pr_fail(pr, MH_EFORMAT, "no container below the MARK");
    struct mh__pv *c = mh__pr_own(pr, start - 1);
    if (!c)
        return pr->code;
    if (c->type != type)
        return mh__pr_fail(pr, MH_EFORMAT, "target is a %s", mh__pv_type_name(c));
    size_t n = pr->sp - start;
    if (type == MH__PV_DICT && n % 2)
        return mh__pr_fail(pr, MH_EFORMAT, "odd number of items for a dict");
    rc = pr->s && type == MH__PV_LIST ? mh__prs_fill(pr, start - 1, stack_at(pr, start), n) : 1;
    if (rc == 1)
        rc = add_items(pr, c, stack_at(pr, start), n);
    pr->sp = start;
    return rc;
}

/* DICT / LIST / TUPLE / FROZENSET: a new container of the items since the mark. */
static int build_from_mark(struct mh__pr *pr, int type)
{
    size_t start = 0;
    int rc = pop_mark(pr, &start);
    if (rc)
        return rc;
    size_t n = pr->sp - start;
    if (type == MH__PV_DICT && n % 2)
        return mh__pr_fail(pr, MH_EFORMAT, "odd number of items for a dict");
    struct mh__pv *c = new_container(pr, type, stack_at(pr, start), n);
    pr->sp = start;
    return c ? mh__pr_push(pr, c) : pr->code;
}

/* SETITEM / APPEND: one key/value or item into the container below. */
static int fill_one(struct mh__pr *pr, int type)
{
    size_t n = type == MH__PV_DICT ? 2 : 1;
    if (pr->sp < mark_base(pr) + n + 1)
        return mh__pr_fail(pr, MH_EFORMAT, "stack underflow");
    struct mh__pv *c = mh__pr_own(pr, pr->sp - n - 1);
    if (!c)
        return pr->code;
    if (c->type != type)
        return mh__pr_fail(pr, MH_EFORMAT, "target is a %s", mh__pv_type_name(c));
    int rc = pr->s && type == MH__PV_LIST ? mh__prs_fill(pr, pr->sp - 2, stack_at(pr, pr->sp - 1), 1)
                                         : 1;
    if (rc == 1)
        rc = add_items(pr, c, stack_at(pr, pr->sp - n), n);
    pr->sp -= n;
    return rc;
}

static int tuple_n(struct mh__pr *pr, size_t n)
{
    if (pr->sp < mark_base(pr) + n)
        return mh__pr_fail(pr, MH_EFORMAT, "stack underflow");
    struct mh__pv *c = new_container(pr, MH__PV_TUPLE, stack_at(pr, pr->sp - n), n);
    pr->sp -= n;
    return c ? mh__pr_push(pr, c) : pr->code;
}

static int do_mark(struct mh__pr *pr)
{
    if (pr->nmarks >= pr->max_depth)
        return mh__pr_fail(pr, MH_ELIMIT, "more than %u open MARKs", pr->max_depth);
    if (grow(pr, (void **)&pr->marks, &pr->mcap, pr->nmarks + 1, sizeof *pr->marks))
        return pr->code;
    if (pr->s && pr->sp > mark_base(pr) && pr->stack[pr->sp - 1]->type == MH__PV_LIST &&
        (!mh__pr_own(pr, pr->sp - 1) || mh__prs_mark(pr)))
        return pr->code ? pr->code : MH_ENOMEM;
    pr->marks[pr->nmarks++] = pr->sp;
    return 0;
}

static int memo_put(struct mh__pr *pr, uint64_t idx)
{
    if (!top(pr))
        return MH_EFORMAT;
    struct mh__pv *v = mh__pr_own(pr, pr->sp - 1);
    if (!v)
        return pr->code;
    if (idx > pr->memo_writes + MEMO_SLACK)
        return mh__pr_fail(pr, MH_ELIMIT, "memo index %llu far beyond the %zu entries written",
                           (unsigned long long)idx, pr->memo_writes);
    if (pr->s) {
        pr->memo_writes++;
        return mh__prs_memo_put(pr, idx, v);
    }
    size_t old = pr->memo_cap;
    if (grow(pr, (void **)&pr->memo, &pr->memo_cap, (size_t)idx + 1, sizeof *pr->memo))
        return pr->code;
    if (pr->memo_cap > old)
        memset(pr->memo + old, 0, (pr->memo_cap - old) * sizeof *pr->memo);
    pr->memo[idx] = v;
    pr->memo_writes++;
    return 0;
}

static int memo_get(struct mh__pr *pr, uint64_t idx)
{
    if (pr->s)
        return mh__prs_memo_get(pr, idx);
    if (idx >= pr->memo_cap || !pr->memo[idx])
        return mh__pr_fail(pr, MH_EFORMAT, "memo entry %llu was never stored",
                           (unsigned long long)idx);
    return mh__pr_push(pr, pr->memo[idx]);
}

static uint64_t le(const unsigned char *b, size_t n)
{
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        x |= (uint64_t)b[i] << (8 * i);
    return x;
}

/* Reads an n-byte little-endian length (n = 1, 4 or 8). */
static int take_len(struct mh__pr *pr, size_t n, uint64_t *len)
{
    const unsigned char *b = mh__pr_take(pr, n);
    if (!b)
        return MH_ETRUNCATED;
    *len = le(b, n);
    return 0;
}

static int push_int(struct mh__pr *pr, int64_t x)
{
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_INT);
    if (v)
        v->u.i = x;
    return mh__pr_push(pr, v);
}

/* LONG1 / LONG4: little-endian two's complement of n bytes. */
static int push_long(struct mh__pr *pr, size_t lenbytes)
{
    uint64_t n;
    int rc = take_len(pr, lenbytes, &n);
    if (rc)
        return rc;
    if (lenbytes == 4 && n > INT32_MAX)
        return mh__pr_fail(pr, MH_EFORMAT, "negative byte count");
    const unsigned char *b = mh__pr_take(pr, n);
    if (!b)
        return MH_ETRUNCATED;
    if (n <= 8) {
        uint64_t x = le(b, n);
        if (n && n < 8 && (b[n - 1] & 0x80))
            x |= ~0ull << (8 * n);
        return push_int(pr, (int64_t)x);
    }
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_BIGINT);
    if (v) {
        v->n = (uint32_t)n;
        v->u.s = (const char *)b;
        if (n > UINT32_MAX)
            return mh__pr_fail(pr, MH_ELIMIT, "integer of %llu bytes", (unsigned long long)n);
    }
    return mh__pr_push(pr, v);
}

/* Binary strings and bytes: `lenbytes` length prefix, then the data. */
static int push_blob(struct mh__pr *pr, size_t lenbytes, int type)
{
    uint64_t n;
    int rc = take_len(pr, lenbytes, &n);
    if (rc)
        return rc;
    if (pr->op == 'T' && n > INT32_MAX)
        return mh__pr_fail(pr, MH_EFORMAT, "negative byte count");
    const unsigned char *s = mh__pr_take(pr, n);
    if (!s)
        return MH_ETRUNCATED;
    if (n > UINT32_MAX)
        return mh__pr_fail(pr, MH_ELIMIT, "string of %llu bytes", (unsigned long long)n);
    if (type == MH__PV_STR && pr->op != 'T' && pr->op != 'U' && !mh__utf8_valid(s, n))
        return mh__pr_fail(pr, MH_EFORMAT, "string is not valid UTF-8");
    if (type == MH__PV_STR && (pr->op == 'T' || pr->op == 'U'))
        return mh__pr_push(pr, mh__pr_latin1(pr, s, n));
    struct mh__pv *v = mh__pr_scalar(pr, type);
    if (v) {
        v->n = (uint32_t)n;
        v->u.s = (const char *)s;
    }
    return mh__pr_push(pr, v);
}

static int push_float(struct mh__pr *pr)
{
    const unsigned char *b = mh__pr_take(pr, 8);
    if (!b)
        return MH_ETRUNCATED;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits = bits << 8 | b[i];
    struct mh__pv *v = mh__pr_scalar(pr, MH__PV_FLOAT);
    if (v)
        memcpy(&v->u.f, &bits, sizeof bits);
    return mh__pr_push(pr, v);
}

/* Opcodes that would import or call code: refused (MH_EUNSAFE). */
static int is_unsafe(unsigned char op)
{
    switch (op) {
    case 'c':
    case 0x93:
    case 'R':
    case 'b':
    case 0x81:
    case 0x92:
    case 'i':
    case 'o':
    case 0x82:
    case 0x83:
    case 0x84:
    case 'P':
    case 'Q':
        return 1;
    default:
        return 0;
    }
}

/* POP: drops the top item, or the mark when nothing is above it (as Python). */
static int do_pop(struct mh__pr *pr)
{
    if (pr->sp > mark_base(pr)) {
        pr->sp--;
        return 0;
    }
    size_t start = 0;
    return pop_mark(pr, &start);
}

static int do_memo_text(struct mh__pr *pr, int put)
{
    uint64_t idx;
    int rc = mh__pr_text_index(pr, &idx);
    if (rc)
        return rc;
    return put ? memo_put(pr, idx) : memo_get(pr, idx);
}

static int do_memo_bin(struct mh__pr *pr, size_t n, int put)
{
    uint64_t idx;
    int rc = take_len(pr, n, &idx);
    if (rc)
        return rc;
    return put ? memo_put(pr, idx) : memo_get(pr, idx);
}

static int do_proto(struct mh__pr *pr)
{
    uint64_t v;
    int rc = take_len(pr, 1, &v);
    if (rc)
        return rc;
    if (v > 5)
        return mh__pr_fail(pr, MH_EVERSION, "unsupported protocol %u", (unsigned)v);
    pr->doc->protocol = (int)v;
    return 0;
}

static int do_frame(struct mh__pr *pr)
{
    uint64_t n;
    int rc = take_len(pr, 8, &n);
    if (rc)
        return rc;
    if (n > (uint64_t)(pr->end - pr->p))
        return mh__pr_fail(pr, MH_ETRUNCATED, "frame of %llu bytes, %zu left",
                           (unsigned long long)n, (size_t)(pr->end - pr->p));
    return 0;
}

/* One data opcode. Returns 0, 1 after STOP, or a negative error. One case
 * per opcode of pickletools' table: a flat dispatch reads best as one switch. */
static int step(struct mh__pr *pr, unsigned char op)
{
    int rc;
    switch (op) {
    case 0x80:
        return do_proto(pr);
    case 0x95:
        return do_frame(pr);
    case '.': {
        struct mh__pv *v = pop(pr);
        if (!v)
            return MH_EFORMAT;
        pr->doc->root = v;
        return 1;
    }
    case 'N':
        return mh__pr_push(pr, pr->consts[0]);
    case 0x89:
        return mh__pr_push(pr, pr->consts[1]);
    case 0x88:
        return mh__pr_push(pr, pr->consts[2]);
    case 'K': {
        uint64_t x;
        return (rc = take_len(pr, 1, &x)) ? rc : push_int(pr, (int64_t)x);
    }
    case 'M': {
        uint64_t x;
        return (rc = take_len(pr, 2, &x)) ? rc : push_int(pr, (int64_t)x);
    }
    case 'J': {
        uint64_t x;
        return (rc = take_len(pr, 4, &x)) ? rc : push_int(pr, (int64_t)(int32_t)(uint32_t)x);
    }
    case 0x8a:
        return push_long(pr, 1);
    case 0x8b:
        return push_long(pr, 4);
    case 'I':
        return mh__pr_text_int(pr);
    case 'L':
        return mh__pr_text_long(pr);
    case 'F':
        return mh__pr_text_float(pr);
    case 'G':
        return push_float(pr);
    case 'S':
        return mh__pr_text_string(pr);
    case 'V':
        return mh__pr_text_unicode(pr);
    case 'T':
        return push_blob(pr, 4, MH__PV_STR);
    case 'U':
        return push_blob(pr, 1, MH__PV_STR);
    case 0x8c:
        return push_blob(pr, 1, MH__PV_STR);
    case 'X':
        return push_blob(pr, 4, MH__PV_STR);
    case 0x8d:
        return push_blob(pr, 8, MH__PV_STR);
    case 'C':
        return push_blob(pr, 1, MH__PV_BYTES);
    case 'B':
        return push_blob(pr, 4, MH__PV_BYTES);
    case 0x8e:
        return push_blob(pr, 8, MH__PV_BYTES);
    case 0x96:
        return push_blob(pr, 8, MH__PV_BYTES); /* BYTEARRAY8: read as bytes */
    case 0x97:
        return mh__pr_fail(pr, MH_EUNSUPPORTED,
                           "out-of-band buffers are not available to this reader");
    case 0x98:
        return top(pr) ? 0 : MH_EFORMAT; /* READONLY_BUFFER: no effect on data */
    case '}':
        return mh__pr_push(pr, shared_empty(pr, MH__PV_DICT));
    case ']':
        return mh__pr_push(pr, shared_empty(pr, MH__PV_LIST));
    case ')':
        return mh__pr_push(pr, shared_empty(pr, MH__PV_TUPLE));
    case 0x8f:
        return mh__pr_push(pr, shared_empty(pr, MH__PV_SET));
    case '(':
        return do_mark(pr);
    case 's':
        return fill_one(pr, MH__PV_DICT);
    case 'a':
        return fill_one(pr, MH__PV_LIST);
    case 'u':
        return fill_from_mark(pr, MH__PV_DICT);
    case 'e':
        return fill_from_mark(pr, MH__PV_LIST);
    case 0x90:
        return fill_from_mark(pr, MH__PV_SET);
    case 'd':
        return build_from_mark(pr, MH__PV_DICT);
    case 'l':
        return build_from_mark(pr, MH__PV_LIST);
    case 't':
        return build_from_mark(pr, MH__PV_TUPLE);
    case 0x91:
        return build_from_mark(pr, MH__PV_FROZENSET);
    case 0x85:
        return tuple_n(pr, 1);
    case 0x86:
        return tuple_n(pr, 2);
    case 0x87:
        return tuple_n(pr, 3);
    case 'p':
        return do_memo_text(pr, 1);
    case 'g':
        return do_memo_text(pr, 0);
    case 'q':
        return do_memo_bin(pr, 1, 1);
    case 'r':
        return do_memo_bin(pr, 4, 1);
    case 'h':
        return do_memo_bin(pr, 1, 0);
    case 'j':
        return do_memo_bin(pr, 4, 0);
    case 0x94:
        return memo_put(pr, pr->memo_writes);
    case '0':
        return do_pop(pr);
    case '1': {
        size_t start = 0;
        rc = pop_mark(pr, &start);
        if (!rc)
            pr->sp = start;
        return rc;
    }
    case '2': {
        if (!top(pr))
            return MH_EFORMAT;
        struct mh__pv *v = mh__pr_own(pr, pr->sp - 1);
        return v ? mh__pr_push(pr, v) : pr->code;
    }
    default:
        return mh__pr_fail(pr, MH_EFORMAT, "unknown opcode 0x%02x", op);
    }
}

/* Names what GLOBAL / INST wanted to import ("os system"), for the message. */
static int unsafe(struct mh__pr *pr)
{
    if (pr->op != 'c' && pr->op != 'i')
        return mh__pr_fail(pr, MH_EUNSAFE, "only plain data is read");
    char what[80];
    size_t n = 0;
    int lines = 0;
    for (const unsigned char *p = pr->p; p < pr->end && n + 1 < sizeof what; p++) {
        if (*p == '\n' && ++lines == 2)
            break;
        what[n++] = *p == '\n' ? ' ' : (*p >= 32 && *p < 127 ? (char)*p : '?');
    }
    while (n && what[n - 1] == ' ')
        n--;
    what[n] = '\0';
    return mh__pr_fail(pr, MH_EUNSAFE, "'%s': only plain data is read", what);
}

static int run(struct mh__pr *pr)
{
    for (;;) {
        if (pr->p >= pr->end) {
            pr->op_off = (size_t)(pr->p - pr->base);
            pr->op = 0;
            return mh__pr_fail(pr, MH_ETRUNCATED, "data ends before the STOP opcode");
        }
        pr->op_off = (size_t)(pr->p - pr->base);
        pr->op = *pr->p++;
        if (is_unsafe(pr->op))
            return unsafe(pr);
        int rc = step(pr, pr->op);
        if (rc == 1)
            return 0;
        if (rc < 0)
            return rc;
    }
}

int mh__pickle_parse(const void *data, size_t len, const struct mh__pickle_limits *lim,
                     struct mh__pickle_doc **out, char *err, size_t errlen)
{
    return mh__pickle_parse_with(data, len, lim, NULL, out, err, errlen);
}

int mh__pickle_parse_with(const void *data, size_t len, const struct mh__pickle_limits *lim,
                          struct mh__prs *s, struct mh__pickle_doc **out, char *err,
                          size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    struct mh__pickle_doc *doc = calloc(1, sizeof *doc);
    if (!doc)
        return MH_ENOMEM;
    doc->per_byte = !(lim && lim->max_bytes);
    doc->max_bytes = doc->per_byte ? LIMIT_FLOOR + (uint64_t)len * LIMIT_PER_BYTE : lim->max_bytes;
    struct mh__pr pr;
    memset(&pr, 0, sizeof pr);
    pr.base = pr.p = data;
    pr.end = pr.base + len;
    pr.doc = doc;
    pr.max_depth = lim && lim->max_depth ? lim->max_depth : 200;
    if (pr.max_depth > 250)
        pr.max_depth = 250;
    pr.err = err;
    pr.errlen = errlen;
    pr.s = s;
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        pr.consts[i] = mh__pr_scalar(&pr, i ? MH__PV_BOOL : MH__PV_NONE);
        if (!pr.consts[i])
            rc = pr.code;
        else
            pr.consts[i]->u.i = i == 2;
    }
    for (int i = 0; i < 4 && !rc; i++)
        if (!(pr.empties[i] = mh__pr_scalar(&pr, MH__PV_TUPLE + i)))
            rc = pr.code;
    if (!rc)
        rc = run(&pr);
    free(pr.stack);
    free(pr.marks);
    free(pr.memo);
    if (rc < 0) {
        mh__pickle_doc_free(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

void mh__bigs_free(struct mh__big *g)
{
    while (g) {
        struct mh__big *next = g->next;
        free(g);
        g = next;
    }
}

struct mh__pv *mh__pickle_doc_root(const struct mh__pickle_doc *doc)
{
    return doc->root;
}

uint64_t mh__pickle_doc_bytes(const struct mh__pickle_doc *doc)
{
    return doc->bytes;
}

int mh__pickle_doc_protocol(const struct mh__pickle_doc *doc)
{
    return doc->protocol;
}

void mh__pickle_doc_free(struct mh__pickle_doc *doc)
{
    if (!doc)
        return;
    mh__arena_free(doc->blocks);
    mh__bigs_free(doc->bigs);
    mh__kept_free(doc->kept);
    free(doc);
}
