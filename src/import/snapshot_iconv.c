/* snapshot_iconv.c - snapshot import, first half: checks the value tree read
 * from a pickle against the snapshot schema (reference pytorch-allocator.md
 * section 3, every torch version from 2.0) and converts segments, blocks,
 * trace entries and annotations into flat arrays, interning frames, stacks
 * and strings in the writer. Frame dicts and frame lists shared through the
 * pickle memo are interned once (cache by node). Segment, block and entry
 * dicts must not be shared: torch never does, and a pickle that repeats one
 * node a million times must not cost a million times the work. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

#define MAX_DEVICES 4096
#define SMALL_SEGMENT (2ull << 20)

int mh__imp_fail(struct mh__imp *im, int code, const char *fmt, ...)
{
    if (im->err && im->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(im->err, im->errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Refuses a dict or list met twice (see the file comment). */
static int visit(struct mh__imp *im, const struct mh__pv *v, const char *path)
{
    if (v->mark)
        return mh__imp_fail(im, MH_EFORMAT, "%s: the same object appears twice", path);
    ((struct mh__pv *)v)->mark = 1;
    return 0;
}

static int need_u64(struct mh__imp *im, const struct mh__pv *d, const char *key, const char *path,
                    uint64_t *out)
{
    const struct mh__pv *v = mh__pv_get(d, key);
    if (!v || mh__pv_u64(v, out))
        return mh__imp_fail(im, MH_EFORMAT, "%s: '%s' is %s, expected a non-negative int", path,
                            key, v ? mh__pv_type_name(v) : "missing");
    return 0;
}

/* Optional int: absent or None gives `dflt`. Negative streams wrap as
 * unsigned (a raw pointer value). */
static int opt_u64(struct mh__imp *im, const struct mh__pv *d, const char *key, const char *path,
                   uint64_t dflt, uint64_t *out)
{
    const struct mh__pv *v = mh__pv_get(d, key);
    int64_t i;
    *out = dflt;
    if (!v || v->type == MH__PV_NONE)
        return 0;
    if (mh__pv_u64(v, out) == 0)
        return 0;
    if (mh__pv_i64(v, &i) == 0) {
        *out = (uint64_t)i;
        return 0;
    }
    return mh__imp_fail(im, MH_EFORMAT, "%s: '%s' is %s, expected an int", path, key,
                        mh__pv_type_name(v));
}

static int pool_id(struct mh__imp *im, const struct mh__pv *v, const char *path, uint32_t pool[2])
{
    pool[0] = pool[1] = 0;
    if (!v || v->type == MH__PV_NONE)
        return 0;
    uint64_t a, b;
    if (!mh__pv_is_seq(v) || v->n != 2 || mh__pv_u64(mh__pv_at(v, 0), &a) ||
        mh__pv_u64(mh__pv_at(v, 1), &b) || a > UINT32_MAX || b > UINT32_MAX)
        return mh__imp_fail(im, MH_EFORMAT, "%s: pool id is not a pair of ints", path);
    pool[0] = (uint32_t)a;
    pool[1] = (uint32_t)b;
    return 0;
}

static char *dup_str(const struct mh__pv *v)
{
    char *s = malloc(v->n + 1);
    if (s) {
        memcpy(s, v->u.s, v->n);
        s[v->n] = '\0';
    }
    return s;
}

static int conv_frame(struct mh__imp *im, const struct mh__pv *f, const char *path, uint32_t *id)
{
    if (f->type == MH__PV_HANDLE && f->n == MH__H_FRAME) {
        *id = (uint32_t)f->u.i;
        return 0;
    }
    if (mh__ptrmap_get(im->frame_ids, f, id) == 0)
        return 0;
    const struct mh__pv *file = mh__pv_get(f, "filename"), *name = mh__pv_get(f, "name");
    int64_t line = 0;
    if (!file || file->type != MH__PV_STR || !name || name->type != MH__PV_STR ||
        (mh__pv_get(f, "line") && mh__pv_i64(mh__pv_get(f, "line"), &line)))
        return mh__imp_fail(im, MH_EFORMAT,
                            "%s: a frame needs str 'filename' and 'name' and an int 'line'", path);
    char *fs = dup_str(file), *ns = dup_str(name);
    int64_t got = fs && ns ? mh_writer_intern_frame(
                                 im->w, fs, ns, line < 0 || line > UINT32_MAX ? 0 : (uint32_t)line)
                           : MH_ENOMEM;
    free(fs);
    free(ns);
    if (got < 0)
        return mh__imp_fail(im, (int)got, "%s: %s", path, mh_strerror((int)got));
    *id = (uint32_t)got;
    return mh__ptrmap_put(&im->frame_ids, f, *id);
}

/* A frames list (innermost first) to a stack id; 0 for none or empty. */
static int conv_frames(struct mh__imp *im, const struct mh__pv *list, const char *path,
                       uint32_t *stack)
{
    *stack = 0;
    if (!list || list->type == MH__PV_NONE)
        return 0;
    if (list->type == MH__PV_HANDLE && list->n == MH__H_STACK) {
        *stack = (uint32_t)list->u.i;
        return 0;
    }
    if (!mh__pv_is_seq(list))
        return mh__imp_fail(im, MH_EFORMAT, "%s: 'frames' is %s, expected a list", path,
                            mh__pv_type_name(list));
    if (list->n == 0 || mh__ptrmap_get(im->stack_ids, list, stack) == 0)
        return 0;
    uint32_t *ids = malloc(list->n * sizeof *ids);
    if (!ids)
        return MH_ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; i < list->n && !rc; i++) {
        const struct mh__pv *f = mh__pv_at(list, i);
        rc = f->type == MH__PV_DICT || (f->type == MH__PV_HANDLE && f->n == MH__H_FRAME)
                 ? conv_frame(im, f, path, &ids[i])
                 : mh__imp_fail(im, MH_EFORMAT, "%s: a frame is %s", path, mh__pv_type_name(f));
    }
    int64_t got = rc ? rc : mh_writer_intern_stack(im->w, ids, list->n);
    free(ids);
    im->saw_frames |= got > 0;
    if (got < 0)
        return rc ? rc : mh__imp_fail(im, (int)got, "%s: %s", path, mh_strerror((int)got));
    *stack = (uint32_t)got;
    return mh__ptrmap_put(&im->stack_ids, list, *stack);
}

static int block_state(const struct mh__pv *v)
{
    if (mh__pv_is_str(v, "active_allocated"))
        return MH_BLOCK_ALLOCATED;
    if (mh__pv_is_str(v, "active_pending_free") || mh__pv_is_str(v, "active_awaiting_free"))
        return MH_BLOCK_PENDING_FREE;
    if (mh__pv_is_str(v, "inactive"))
        return MH_BLOCK_INACTIVE;
    return -1;
}

static int push_block(struct mh__imp *im, const struct mh__iblk *b)
{
    if ((im->nblks & (im->nblks + 1)) == 0 || im->nblks == 0) {
        size_t cap = im->nblks ? 2 * (im->nblks + 1) : 64;
        struct mh__iblk *p = realloc(im->blks, cap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        im->blks = p;
    }
    im->blks[im->nblks++] = *b;
    return 0;
}

/* Requested size and stack of a block; legacy 2.0 blocks keep them in
 * `history` (last entry: real_size, frames). */
static int block_extra(struct mh__imp *im, const struct mh__pv *b, const char *path,
                       struct mh__iblk *out)
{
    const struct mh__pv *hist = mh__pv_get(b, "history");
    const struct mh__pv *last = mh__pv_is_seq(hist) && hist->n ? mh__pv_at(hist, hist->n - 1) : NULL;
    const struct mh__pv *frames = mh__pv_get(b, "frames");
    if (last && last->type != MH__PV_DICT)
        return mh__imp_fail(im, MH_EFORMAT, "%s: a history entry is %s", path,
                            mh__pv_type_name(last));
    if (last && !frames) { /* torch 2.0/2.1 keep the stack in the history */
        frames = mh__pv_get(last, "frames");
        im->info->legacy_history = 1;
    }
    int rc = mh__pv_get(b, "requested_size") || !last
                 ? opt_u64(im, b, "requested_size", path, out->size, &out->requested)
                 : opt_u64(im, last, "real_size", path, out->size, &out->requested);
    return rc ? rc : conv_frames(im, frames, path, &out->stack);
}

static int conv_blocks(struct mh__imp *im, const struct mh__pv *blocks, const struct mh__iseg *g,
                       const char *spath)
{
    char path[96];
    uint64_t addr = g->address;
    if (!mh__pv_is_seq(blocks))
        return mh__imp_fail(im, MH_EFORMAT, "%s: 'blocks' is %s, expected a list", spath,
                            mh__pv_type_name(blocks));
    for (uint32_t i = 0; i < blocks->n; i++) {
        const struct mh__pv *b = mh__pv_at(blocks, i);
        snprintf(path, sizeof path, "%s.blocks[%u]", spath, i);
        if (b->type != MH__PV_DICT)
            return mh__imp_fail(im, MH_EFORMAT, "%s is %s, expected a dict", path,
                                mh__pv_type_name(b));
        struct mh__iblk blk;
        memset(&blk, 0, sizeof blk);
        int rc = visit(im, b, path);
        if (!rc)
            rc = need_u64(im, b, "size", path, &blk.size);
        if (rc)
            return rc;
        int st = block_state(mh__pv_get(b, "state"));
        if (st < 0)
            return mh__imp_fail(im, MH_EFORMAT, "%s: unknown block state", path);
        blk.state = (uint8_t)st;
        blk.device = g->device;
        blk.address = addr; /* blocks tile the segment (the viewer does the same) */
        blk.stream = g->stream;
        memcpy(blk.pool, g->pool, sizeof blk.pool);
        addr += blk.size;
        im->info->blocks++;
        if (st == MH_BLOCK_INACTIVE)
            continue;
        if ((rc = block_extra(im, b, path, &blk)) || (rc = push_block(im, &blk)))
            return rc;
    }
    if (blocks->n && addr != g->address + g->size)
        im->info->inconsistencies++;
    return 0;
}

static int push_segment(struct mh__imp *im, const struct mh__iseg *g)
{
    if (im->nsegs == im->segcap) {
        size_t cap = im->segcap ? 2 * im->segcap : 64;
        struct mh__iseg *p = realloc(im->segs, cap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        im->segs = p;
        im->segcap = cap;
    }
    im->segs[im->nsegs++] = *g;
    return 0;
}

int mh__imp_segment(struct mh__imp *im, const struct mh__pv *s, uint64_t i)
{
    char path[48];
    snprintf(path, sizeof path, "segments[%llu]", (unsigned long long)i);
    if (!s || s->type != MH__PV_DICT)
        return mh__imp_fail(im, MH_EFORMAT, "%s is %s, expected a dict", path, mh__pv_type_name(s));
    struct mh__iseg g;
    memset(&g, 0, sizeof g);
    uint64_t dev;
    int expandable = 0;
    int rc = visit(im, s, path);
    if (!rc)
        rc = opt_u64(im, s, "device", path, 0, &dev);
    if (!rc && dev >= MAX_DEVICES)
        rc = mh__imp_fail(im, MH_ELIMIT, "%s: device %lld is not a device number (0 to %d)",
                          path, (long long)dev, MAX_DEVICES - 1);
    if (!rc)
        rc = need_u64(im, s, "address", path, &g.address);
    if (!rc)
        rc = need_u64(im, s, "total_size", path, &g.size);
    if (!rc)
        rc = opt_u64(im, s, "stream", path, 0, &g.stream);
    if (!rc)
        rc = pool_id(im, mh__pv_get(s, "segment_pool_id"), path, g.pool);
    if (!rc)
        rc = conv_frames(im, mh__pv_get(s, "frames"), path, &g.stack);
    if (rc)
        return rc;
    g.device = (int)dev;
    const struct mh__pv *type = mh__pv_get(s, "segment_type");
    g.small = type ? mh__pv_is_str(type, "small") : g.size == SMALL_SEGMENT;
    if (mh__pv_get(s, "is_expandable"))
        mh__pv_bool(mh__pv_get(s, "is_expandable"), &expandable);
    g.expandable = (uint8_t)expandable;
    if ((rc = push_segment(im, &g)))
        return rc;
    const struct mh__pv *blocks = mh__pv_get(s, "blocks");
    if (!blocks)
        return mh__imp_fail(im, MH_EFORMAT, "%s: 'blocks' missing", path);
    if ((rc = visit(im, blocks, path)))
        return rc;
    return conv_blocks(im, blocks, &g, path);
}

static int conv_segments(struct mh__imp *im, const struct mh__pv *segs)
{
    if (!segs || segs->type == MH__PV_NONE)
        return 0;
    if (!mh__pv_is_seq(segs))
        return mh__imp_fail(im, MH_EFORMAT, "'segments' is %s, expected a list",
                            mh__pv_type_name(segs));
    for (uint32_t i = 0; i < segs->n; i++) {
        int rc = mh__imp_segment(im, mh__pv_at(segs, i), i);
        if (rc)
            return rc;
    }
    return 0;
}

/* Every item a frame dict or frame handle: worth a stack handle. */
static int frames_like(const struct mh__pv *v)
{
    for (uint32_t i = 0; i < v->n; i++) {
        const struct mh__pv *f = v->u.items[i];
        if (f->type != MH__PV_DICT && !(f->type == MH__PV_HANDLE && f->n == MH__H_FRAME))
            return 0;
    }
    return 1;
}

int mh__imp_keep(struct mh__imp *im, const struct mh__pv *v, struct mh__pv *h)
{
    uint32_t id;
    memset(h, 0, sizeof *h);
    h->type = MH__PV_HANDLE;
    if (v->type == MH__PV_DICT) {
        if (mh__ptrmap_get(im->frame_ids, v, &id) != 0)
            return 1;
        h->n = MH__H_FRAME;
        h->u.i = (int64_t)(id | mh__imp_frame_flags(v));
        return 0;
    }
    if (!mh__pv_is_seq(v) || !frames_like(v))
        return 1;
    if (mh__ptrmap_get(im->stack_ids, v, &id) != 0) {
        char saved[160] = "";
        if (im->err && im->errlen)
            snprintf(saved, sizeof saved, "%s", im->err);
        int rc = conv_frames(im, v, "frames", &id);
        if (im->err && im->errlen)
            snprintf(im->err, im->errlen, "%s", saved);
        if (rc)
            return 1;
    }
    h->n = MH__H_STACK;
    h->u.i = (int64_t)(id | mh__imp_flags(v));
    return 0;
}

void mh__imp_forget_nodes(struct mh__imp *im)
{
    mh__ptrmap_free(im->frame_ids);
    mh__ptrmap_free(im->stack_ids);
    im->frame_ids = im->stack_ids = NULL;
}

int mh__imp_convert(struct mh__imp *im, const struct mh__pv *root)
{
    if (mh__pv_is_seq(root)) { /* the oldest form: a bare list of segments */
        int rc = conv_segments(im, root);
        im->info->segments = im->nsegs;
        return rc;
    }
    if (!root || root->type != MH__PV_DICT)
        return mh__imp_fail(im, MH_EFORMAT, "the pickle holds %s, not a snapshot dict",
                            mh__pv_type_name(root));
    if (!mh__pv_get(root, "segments") && !mh__pv_get(root, "device_traces"))
        return mh__imp_fail(im, MH_EFORMAT,
                            "not a memory snapshot: no 'segments' or 'device_traces'");
    int rc = conv_segments(im, mh__pv_get(root, "segments"));
    if (!rc)
        rc = mh__imp_convert_traces(im, mh__pv_get(root, "device_traces"));
    if (!rc)
        rc = mh__imp_convert_notes(im, mh__pv_get(root, "external_annotations"));
    im->info->segments = im->nsegs;
    return rc;
}

/* Shared with snapshot_itrace.c. */
uint32_t mh__imp_before_trace_stack(struct mh__imp *im)
{
    if (!im->saw_frames || im->before_stack)
        return im->before_stack;
    int64_t frame = mh_writer_intern_frame(im->w, "before recording",
                                           "allocated before recording started", 0);
    uint32_t f = frame > 0 ? (uint32_t)frame : 0;
    int64_t stack = f ? mh_writer_intern_stack(im->w, &f, 1) : 0;
    im->before_stack = stack > 0 ? (uint32_t)stack : 0;
    return im->before_stack;
}

int mh__imp_frames(struct mh__imp *im, const struct mh__pv *list, const char *path, uint32_t *stack)
{
    return conv_frames(im, list, path, stack);
}

int mh__imp_visit(struct mh__imp *im, const struct mh__pv *v, const char *path)
{
    return visit(im, v, path);
}

int mh__imp_opt_u64(struct mh__imp *im, const struct mh__pv *d, const char *key, const char *path,
                    uint64_t dflt, uint64_t *out)
{
    return opt_u64(im, d, key, path, dflt, out);
}

int mh__imp_pool(struct mh__imp *im, const struct mh__pv *v, const char *path, uint32_t pool[2])
{
    return pool_id(im, v, path, pool);
}
