/* pickle_stream.c - the streaming side of the strict pickle reader (see
 * pickle_stream.h): finds the snapshot's big lists on the reader's stack,
 * runs each of their batches in an arena of its own, hands the elements to
 * the sink, keeps what the memo reads back later, and empties the arena.
 * The opcode loop is pickle_read.c's; it calls the hooks below. */
#include "pickle_stream.h"

#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pickle_parse.h"

#define RELEASE_STEP (8u << 20)
#define COPY_MAX_ITEMS 64u

/* A memoized value kept past its batch (pickle_parse.h: doc->kept). */
struct mh__kept {
    struct mh__kept *prev, *next;
    size_t size;
    _Alignas(8) unsigned char data[];
};

struct mslot {
    uint64_t key; /* memo index + 1; 0 = empty */
    struct mh__pv *v;
    int kept;
};

struct tag {
    const struct mh__pv *node;
    int role;
    uint32_t list;
    uint64_t pos;
};

struct mh__prs {
    uint8_t *refs; /* reads left per memo index (pass one); 255 = for good */
    size_t nrefs;
    struct mslot *memo; /* live memo entries only */
    size_t mcap, mlen;
    uint64_t *pending; /* memo indexes put during the batch */
    size_t npend, pcap;
    struct mh__arena_block *tblocks; /* the batch's arena */
    struct mh__big *tbigs;
    uint64_t tbytes;
    int transient;
    size_t open_slot;
    struct tag *tags;
    size_t ntags, tcap;
    struct mh__kept **dead; /* kept values read for the last time in the batch */
    size_t ndead, dcap;
    const struct mh__pickle_sink *sink;
    const unsigned char *base;
    size_t len, released;
    int mapped, sunk, whole;
};

int mh__prs_transient(const struct mh__prs *s)
{
    return s->transient;
}

struct mh__arena_block **mh__prs_blocks(struct mh__prs *s)
{
    return &s->tblocks;
}

struct mh__big **mh__prs_bigs(struct mh__prs *s)
{
    return &s->tbigs;
}

void mh__prs_count(struct mh__prs *s, uint64_t bytes)
{
    s->tbytes += bytes;
}

void mh__kept_free(struct mh__kept *k)
{
    while (k) {
        struct mh__kept *next = k->next;
        free(k);
        k = next;
    }
}

static int push_u64(uint64_t **arr, size_t *n, size_t *cap, uint64_t v)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 256;
        uint64_t *p = realloc(*arr, ncap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        *arr = p;
        *cap = ncap;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

/* Falls back to the whole-tree reader: recorded as a failure that
 * mh__pickle_stream turns into MH__PS_WHOLE. */
static int whole(struct mh__pr *pr, const char *why)
{
    pr->s->whole = 1;
    return mh__pr_fail(pr, MH_EUNSUPPORTED, "%s", why);
}

/* ---- memo: live entries by index ------------------------------------------ */

static size_t mhash(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9e3779b97f4a7c15ull >> 24) & (cap - 1);
}

static struct mslot *mfind(const struct mh__prs *s, uint64_t idx)
{
    if (!s->mcap)
        return NULL;
    for (size_t i = mhash(idx + 1, s->mcap);; i = (i + 1) & (s->mcap - 1)) {
        if (!s->memo[i].key)
            return NULL;
        if (s->memo[i].key == idx + 1)
            return &s->memo[i];
    }
}

static void mdelete(struct mh__prs *s, struct mslot *slot)
{
    size_t i = (size_t)(slot - s->memo), j = i;
    s->memo[i].key = 0;
    s->mlen--;
    for (;;) { /* backward shift: later entries of the run move up */
        j = (j + 1) & (s->mcap - 1);
        if (!s->memo[j].key)
            return;
        size_t h = mhash(s->memo[j].key, s->mcap);
        if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
            s->memo[i] = s->memo[j];
            s->memo[j].key = 0;
            i = j;
        }
    }
}

static int minsert(struct mh__prs *s, uint64_t idx, struct mh__pv *v)
{
    if (2 * (s->mlen + 1) > s->mcap) {
        size_t ncap = s->mcap ? 2 * s->mcap : 1024;
        struct mslot *m = calloc(ncap, sizeof *m), *old = s->memo;
        if (!m)
            return MH_ENOMEM;
        for (size_t i = 0; i < s->mcap; i++) {
            if (!old[i].key)
                continue;
            size_t j = mhash(old[i].key, ncap);
            while (m[j].key)
                j = (j + 1) & (ncap - 1);
            m[j] = old[i];
        }
        free(old);
        s->memo = m;
        s->mcap = ncap;
    }
    size_t j = mhash(idx + 1, s->mcap);
    while (s->memo[j].key)
        j = (j + 1) & (s->mcap - 1);
    s->memo[j] = (struct mslot){idx + 1, v, 0};
    s->mlen++;
    return 0;
}

int mh__prs_memo_put(struct mh__pr *pr, uint64_t idx, struct mh__pv *v)
{
    struct mh__prs *s = pr->s;
    struct mslot *old = mfind(s, idx);
    if (old)
        mdelete(s, old); /* a value kept for it stays with the document */
    if (idx >= s->nrefs || !s->refs[idx])
        return 0; /* never read back */
    if (minsert(s, idx, v) ||
        (s->transient && push_u64(&s->pending, &s->npend, &s->pcap, idx)))
        return mh__pr_fail(pr, MH_ENOMEM, "out of memory");
    return 0;
}

int mh__prs_memo_get(struct mh__pr *pr, uint64_t idx)
{
    struct mh__prs *s = pr->s;
    struct mslot *slot = mfind(s, idx);
    if (!slot)
        return mh__pr_fail(pr, MH_EFORMAT, "memo entry %llu was never stored",
                           (unsigned long long)idx);
    struct mh__pv *v = slot->v;
    if (s->refs[idx] != 255 && --s->refs[idx] == 0) {
        /* its last read: a kept value read inside a batch is freed with it */
        if (slot->kept && s->transient) {
            struct mh__kept *k =
                (struct mh__kept *)(void *)((unsigned char *)v - offsetof(struct mh__kept, data));
            if (s->ndead == s->dcap) {
                size_t ncap = s->dcap ? 2 * s->dcap : 64;
                struct mh__kept **p = realloc(s->dead, ncap * sizeof *p);
                if (!p)
                    return mh__pr_fail(pr, MH_ENOMEM, "out of memory");
                s->dead = p;
                s->dcap = ncap;
            }
            s->dead[s->ndead++] = k;
        }
        mdelete(s, slot);
    }
    return mh__pr_push(pr, v);
}

/* ---- keeping values past their batch ----------------------------------------- */

static int in_input(const struct mh__prs *s, const char *p)
{
    return (const unsigned char *)p >= s->base && (const unsigned char *)p <= s->base + s->len;
}

static int has_bytes(const struct mh__pv *v)
{
    return v->type == MH__PV_STR || v->type == MH__PV_BYTES || v->type == MH__PV_BIGINT;
}

/* Bytes a scalar's text needs when it does not point into the input. */
static size_t text_size(const struct mh__prs *s, const struct mh__pv *v)
{
    return has_bytes(v) && v->n && !in_input(s, v->u.s) ? ((size_t)v->n + 7) & ~(size_t)7 : 0;
}

static void *kept_alloc(struct mh__pr *pr, size_t size)
{
    if (mh__pr_account(pr, sizeof(struct mh__kept) + size))
        return NULL;
    struct mh__kept *k = malloc(sizeof *k + size);
    if (!k) {
        mh__pr_fail(pr, MH_ENOMEM, "out of memory");
        return NULL;
    }
    k->size = sizeof *k + size;
    k->prev = NULL;
    k->next = pr->doc->kept;
    if (k->next)
        k->next->prev = k;
    pr->doc->kept = k;
    return k->data;
}

static void kept_release(struct mh__pr *pr, struct mh__kept *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        pr->doc->kept = k->next;
    if (k->next)
        k->next->prev = k->prev;
    mh__pr_unaccount(pr, k->size);
    free(k);
}

/* Copies scalar v into node d, its text after it at *text. */
static void copy_scalar(const struct mh__prs *s, struct mh__pv *d, const struct mh__pv *v,
                        unsigned char **text)
{
    *d = *v;
    size_t t = text_size(s, v);
    if (t) {
        memcpy(*text, v->u.s, v->n);
        d->u.s = (const char *)*text;
        *text += t;
    }
}

/* A copy of v that outlives the batch, or NULL (failure recorded). */
static struct mh__pv *keep_value(struct mh__pr *pr, const struct mh__pv *v)
{
    struct mh__prs *s = pr->s;
    int container = v->type >= MH__PV_TUPLE && v->type <= MH__PV_FROZENSET;
    size_t k = container ? mh__pv_len(v) : 0, size = sizeof *v + text_size(s, v);
    struct mh__pv h;
    if (container && k && s->sink->keep && s->sink->keep(s->sink->ctx, v, &h) == 0) {
        struct mh__pv *d = kept_alloc(pr, sizeof h);
        if (d)
            *d = h;
        return d;
    }
    if (container && k && (v->height > 1 || k > COPY_MAX_ITEMS)) {
        whole(pr, "a memoized container is read back after its batch");
        return NULL;
    }
    for (size_t i = 0; i < k; i++)
        size += sizeof(struct mh__pv *) + sizeof *v + text_size(s, v->u.items[i]);
    struct mh__pv *d = kept_alloc(pr, size);
    if (!d)
        return NULL;
    unsigned char *text = (unsigned char *)(d + 1);
    if (!container) {
        copy_scalar(s, d, v, &text);
        return d;
    }
    *d = *v;
    if (!k)
        return d;
    struct mh__pv **items = (struct mh__pv **)(void *)(d + 1);
    struct mh__pv *nodes = (struct mh__pv *)(void *)(items + k);
    text = (unsigned char *)(nodes + k);
    for (size_t i = 0; i < k; i++) {
        copy_scalar(s, &nodes[i], v->u.items[i], &text);
        items[i] = &nodes[i];
    }
    d->u.items = items;
    return d;
}

/* ---- batches ------------------------------------------------------------------ */

static int batch_end(struct mh__pr *pr)
{
    struct mh__prs *s = pr->s;
    for (size_t i = 0; i < s->npend; i++) {
        struct mslot *slot = mfind(s, s->pending[i]);
        if (!slot || slot->kept || !mh__arena_has(s->tblocks, slot->v))
            continue;
        struct mh__pv *v = keep_value(pr, slot->v);
        if (!v)
            return pr->code;
        slot->v = v;
        slot->kept = 1;
    }
    s->npend = 0;
    if (s->sink->batch_end)
        s->sink->batch_end(s->sink->ctx);
    for (size_t i = 0; i < s->ndead; i++)
        kept_release(pr, s->dead[i]);
    s->ndead = 0;
    uint64_t keep = mh__arena_trim(&s->tblocks);
    mh__bigs_free(s->tbigs);
    s->tbigs = NULL;
    mh__pr_unaccount(pr, s->tbytes - keep);
    s->tbytes = keep;
    s->transient = 0;
    s->open_slot = (size_t)-1;
    size_t at = (size_t)(pr->p - pr->base);
    if (s->mapped && at - s->released >= RELEASE_STEP)
        mh__pickle_release(s->base, &s->released, at);
    if (s->sink->progress)
        s->sink->progress(s->sink->ctx, at, s->len);
    return 0;
}

static int is_key(const struct mh__pv *v, const char *key)
{
    return mh__pv_is_str(v, key);
}

/* The role of the list in stack slot `at`, from the stack's layout as
 * Python's pickler writes a dict of lists; *list gets the device. */
static int role_of(const struct mh__pr *pr, size_t at, uint32_t *list)
{
    struct mh__pv **st = pr->stack;
    *list = 0;
    if (at == 0 && pr->nmarks == 0 && st[0]->type == MH__PV_LIST)
        return MH__PS_SEGMENTS; /* the oldest form: a bare list of segments */
    if (pr->nmarks < 1 || pr->marks[0] != 1 || st[0]->type != MH__PV_DICT || at < 2)
        return 0;
    size_t t; /* the slot of device_traces */
    if (pr->nmarks == 1) {
        if ((at - 2) % 2 == 0 && is_key(st[at - 1], "segments"))
            return MH__PS_SEGMENTS;
        if ((at - 2) % 2 == 0 && is_key(st[at - 1], "external_annotations"))
            return MH__PS_NOTES;
        t = at - 1; /* a single device, appended without a mark */
        if (t < 2 || (t - 2) % 2 || !is_key(st[t - 1], "device_traces") ||
            st[t]->type != MH__PV_LIST)
            return 0;
        *list = st[t]->n;
        return MH__PS_TRACE;
    }
    if (pr->nmarks != 2 || pr->marks[1] < 3 || at < pr->marks[1])
        return 0;
    t = pr->marks[1] - 1;
    if ((t - 2) % 2 || !is_key(st[t - 1], "device_traces") || st[t]->type != MH__PV_LIST ||
        st[t]->n + (at - pr->marks[1]) > UINT32_MAX)
        return 0;
    *list = (uint32_t)(st[t]->n + (at - pr->marks[1]));
    return MH__PS_TRACE;
}

static struct tag *find_tag(const struct mh__prs *s, const struct mh__pv *node)
{
    for (size_t i = s->ntags; i-- > 0;)
        if (s->tags[i].node == node)
            return &s->tags[i];
    return NULL;
}

/* The tag of the list in slot `at` (added when its role is found), or NULL. */
static struct tag *tag_of(struct mh__pr *pr, size_t at)
{
    struct mh__prs *s = pr->s;
    struct tag *t = find_tag(s, pr->stack[at]);
    uint32_t list;
    int role;
    if (t || !(role = role_of(pr, at, &list)))
        return t;
    if (s->ntags == s->tcap) {
        size_t ncap = s->tcap ? 2 * s->tcap : 16;
        struct tag *p = realloc(s->tags, ncap * sizeof *p);
        if (!p) {
            mh__pr_fail(pr, MH_ENOMEM, "out of memory");
            return NULL;
        }
        s->tags = p;
        s->tcap = ncap;
    }
    s->tags[s->ntags] = (struct tag){pr->stack[at], role, list, 0};
    return &s->tags[s->ntags++];
}

int mh__prs_mark(struct mh__pr *pr)
{
    struct mh__prs *s = pr->s;
    if (s->transient)
        return 0;
    struct tag *t = tag_of(pr, pr->sp - 1);
    if (!t)
        return pr->code;
    s->transient = 1;
    s->open_slot = pr->sp - 1;
    return 0;
}

int mh__prs_fill(struct mh__pr *pr, size_t slot, struct mh__pv **items, size_t n)
{
    struct mh__prs *s = pr->s;
    struct tag *t = s->transient && slot != s->open_slot ? NULL : tag_of(pr, slot);
    if (!t)
        return pr->code ? pr->code : 1;
    for (size_t i = 0; i < n; i++) {
        s->sunk = 1;
        int rc = s->sink->item(s->sink->ctx, t->role, t->list, t->pos++, items[i]);
        if (rc == MH__PS_WHOLE)
            return whole(pr, "records of one list arrive apart");
        if (rc < 0 && !pr->code)
            pr->code = rc; /* the sink wrote its own message */
        if (rc < 0)
            return rc;
    }
    return s->transient && slot == s->open_slot ? batch_end(pr) : 0;
}

int mh__prs_change(struct mh__pr *pr, const struct mh__pv *c)
{
    struct mh__prs *s = pr->s;
    if (!s->transient || mh__arena_has(s->tblocks, c))
        return 0;
    return whole(pr, "a container made before a batch changes inside it");
}

/* ---- entry point -------------------------------------------------------------- */

/* Whether every streamed list is where its role says, once each. */
static int placed(const struct mh__prs *s, const struct mh__pv *root)
{
    const struct mh__pv *traces = mh__pv_get(root, "device_traces");
    for (size_t i = 0; i < s->ntags; i++) {
        const struct tag *t = &s->tags[i];
        const char *key = t->role == MH__PS_SEGMENTS ? "segments" : "external_annotations";
        if (t->role == MH__PS_TRACE
                ? !mh__pv_is_seq(traces) || t->list >= traces->n ||
                      traces->u.items[t->list] != t->node
                : root != t->node && mh__pv_get(root, key) != t->node)
            return 0;
        for (size_t j = 0; j < i; j++)
            if (s->tags[j].role == t->role && s->tags[j].list == t->list)
                return 0;
    }
    return 1;
}

static void prs_free(struct mh__prs *s)
{
    mh__arena_free(s->tblocks);
    mh__bigs_free(s->tbigs);
    free(s->refs);
    free(s->memo);
    free(s->pending);
    free(s->tags);
    free(s->dead);
    free(s);
}

int mh__pickle_stream(const void *data, size_t len, const struct mh__pickle_limits *lim,
                      int mapped, const struct mh__pickle_sink *sink, struct mh__pickle_doc **out,
                      int *sunk, char *err, size_t errlen)
{
    *out = NULL;
    *sunk = 0;
    struct mh__prs *s = calloc(1, sizeof *s);
    if (!s)
        return MH_ENOMEM;
    int rc = mh__pickle_scan(data, len, mapped, &s->refs, &s->nrefs);
    if (rc) {
        prs_free(s);
        return rc;
    }
    s->sink = sink;
    s->base = data;
    s->len = len;
    s->mapped = mapped;
    s->open_slot = (size_t)-1;
    rc = mh__pickle_parse_with(data, len, lim, s, out, err, errlen);
    if (rc == 0 && !placed(s, mh__pickle_doc_root(*out))) {
        mh__pickle_doc_free(*out);
        *out = NULL;
        rc = MH__PS_WHOLE;
    }
    if (rc < 0 && s->whole) {
        rc = MH__PS_WHOLE;
        if (err && errlen)
            err[0] = '\0';
    }
    if (rc == 0 && mapped)
        mh__pickle_release(s->base, &s->released, len);
    *sunk = s->sunk;
    if (rc == 0) /* last reads outside a batch: the document owns them */
        s->ndead = 0;
    prs_free(s);
    return rc;
}
