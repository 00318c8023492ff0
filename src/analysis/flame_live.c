/* flame_live.c - the flame tree of what one device has live at one event
 * index (see flame.h): the lifetimes' records live there, each turned into
 * a path of module components or stack frames. Paths are made once per
 * (metadata, stack) pair and cached. Reads definitions from the reader. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "flame.h"
#include "layer_names.h"
#include "memhist/error.h"
#include "stacks.h"

#define MAX_PARTS 512

/* One path being built: names and details point into `text`. */
struct parts {
    const char *names[MAX_PARTS], *details[MAX_PARTS];
    size_t n;
    char text[MAX_PARTS][2][256];
};

static void push(struct parts *p, const char *name, const char *detail)
{
    if (p->n == MAX_PARTS)
        return; /* past the last part kept, frames are left out (their bytes stay on it) */
    snprintf(p->text[p->n][0], sizeof p->text[p->n][0], "%s", name);
    p->names[p->n] = p->text[p->n][0];
    p->details[p->n] = NULL;
    if (detail) {
        snprintf(p->text[p->n][1], sizeof p->text[p->n][1], "%s", detail);
        p->details[p->n] = p->text[p->n][1];
    }
    p->n++;
}

/* "transformer.h.11" -> transformer, h, 11 (details: the path so far). */
static void module_parts(struct parts *p, const char *path)
{
    const char *s = path;
    while (*s) {
        const char *dot = strchr(s, '.');
        size_t k = dot ? (size_t)(dot - s) : strlen(s);
        char name[256], so_far[256];
        snprintf(name, sizeof name, "%.*s", (int)k, s);
        snprintf(so_far, sizeof so_far, "%.*s", (int)(s + k - path), path);
        push(p, name, so_far);
        s += k + (dot ? 1 : 0);
    }
}

/* Frames of a stack, outermost first: "func (dir/file.py:12)". */
/* A frame's file as a frame name shows it: relative to its package or the
 * program's directory where mh__display_path finds one
 * ("transformers/models/gpt2/modeling_gpt2.py"), else its last two
 * components. The full path is the frame's detail. */
static const char *frame_path(const struct mh_reader *r, const char *file)
{
    const char *shown = mh__display_path(r, file);
    return shown != file ? shown : mh__short_path(file);
}

static void stack_parts(struct parts *p, const struct mh_reader *r, uint32_t stack)
{
    const uint32_t *frames;
    size_t n;
    if (stack == 0 || mh_reader_stack(r, stack, &frames, &n) != 0 || n == 0) {
        push(p, MH__FLAME_NO_STACK, NULL);
        return;
    }
    for (size_t i = n; i-- > 0;) {
        struct mh_frame f;
        char name[256], detail[256];
        if (mh_reader_frame(r, frames[i], &f) != 0) {
            snprintf(name, sizeof name, "<frame %u>", frames[i]);
            push(p, name, NULL);
            continue;
        }
        const char *file = frame_path(r, f.file ? f.file : ""),
                   *func = f.func && *f.func ? f.func : "?";
        if (*file && f.line)
            snprintf(name, sizeof name, "%s (%s:%u)", func, file, f.line);
        else if (*file)
            snprintf(name, sizeof name, "%s (%s)", func, file);
        else
            snprintf(name, sizeof name, "%s", func);
        push(p, name, mh__frame_text(r, frames[i], detail, sizeof detail));
    }
}

/* The module path of a record: the name torch tagged it with (a
 * parameter's "transformer.h.0.mlp.c_fc.weight") or its metadata or
 * scope; NULL if neither is a module path. */
static const char *module_of(const struct mh_reader *r, const struct mh__alloc_rec *rec)
{
    const char *tag = rec->tag_str ? mh_reader_string(r, rec->tag_str) : NULL;
    if (mh__is_module_path(tag))
        return tag;
    const char *meta = rec->str ? mh_reader_string(r, rec->str) : NULL;
    return mh__is_module_path(meta) ? meta : NULL;
}

/* The leaf of a record's path, made if new. */
static int leaf_of(struct mh__flame *f, const struct mh_reader *r, const struct mh__alloc_rec *rec,
                   int by, struct parts *p, uint32_t *leaf)
{
    const char *meta = module_of(r, rec);
    uint32_t at = 0;
    int rc = 0;
    p->n = 0;
    if (by == MH__FLAME_BY_MODULE && meta) {
        module_parts(p, meta);
        return mh__flame_path(f, 0, p->names, p->details, p->n, MH__FLAME_MODULE, leaf);
    }
    if (by == MH__FLAME_BY_MODULE) {
        const char *none = MH__FLAME_NO_MODULE;
        rc = mh__flame_path(f, 0, &none, NULL, 1, MH__FLAME_OTHER, &at);
    }
    stack_parts(p, r, rec->stack);
    int kind = p->n == 1 && strcmp(p->names[0], MH__FLAME_NO_STACK) == 0 ? MH__FLAME_OTHER
                                                                         : MH__FLAME_FRAME;
    return rc ? rc : mh__flame_path(f, at, p->names, p->details, p->n, kind, leaf);
}

static int choose_by(const struct mh__alloc_rec *recs, size_t n, const struct mh_reader *r,
                     int device, uint64_t index)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i].device == device && mh__alloc_rec_live_at(&recs[i], index) &&
            module_of(r, &recs[i]))
            return MH__FLAME_BY_MODULE;
    return MH__FLAME_BY_STACK;
}

int mh__flame_live(const struct mh__lifetimes *lt, const struct mh_reader *r, int device,
                   uint64_t index, int by, struct mh__flame **out, int *used)
{
    size_t n;
    const struct mh__alloc_rec *recs = mh__lifetimes_records(lt, &n);
    if (by == MH__FLAME_BY_AUTO)
        by = choose_by(recs, n, r, device, index);
    if (used)
        *used = by;
    struct mh__flame *f = NULL;
    struct parts *p = malloc(sizeof *p);
    struct mh__hmap cache = {0};
    int rc = p ? mh__flame_new("all", &f) : MH_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct mh__alloc_rec *rec = &recs[i];
        if (rec->device != device || !mh__alloc_rec_live_at(rec, index))
            continue;
        /* a path depends on the metadata and the stack, or by module on a
         * tagged module path alone */
        uint64_t key = ((uint64_t)rec->str << 32 | rec->stack) + 1;
        if (by == MH__FLAME_BY_MODULE && rec->tag_str &&
            mh__is_module_path(mh_reader_string(r, rec->tag_str)))
            key = 1ull << 63 | rec->tag_str;
        uint32_t leaf = (uint32_t)(uintptr_t)mh__addrmap_get(&cache, key);
        if (leaf == 0) { /* 0 is the root, never a leaf: not cached yet */
            rc = leaf_of(f, r, rec, by, p, &leaf);
            if (rc == 0)
                rc = mh__addrmap_put(&cache, key, (void *)(uintptr_t)leaf);
        }
        if (rc == 0)
            mh__flame_add(f, leaf, rec->size, rec->category);
    }
    mh__addrmap_destroy(&cache);
    free(p);
    if (rc < 0) {
        mh__flame_free(f);
        return rc;
    }
    mh__flame_finish(f);
    *out = f;
    return 0;
}
