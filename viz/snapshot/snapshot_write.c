/* snapshot_write.c - second phase of snapshot export: emits the window
 * counted by snapshot_build.c as the pickle torch.cuda.memory._snapshot()
 * would give, through pickle_write.h: the model's final segments, then each
 * device's trace, streamed from one more replay of the file per device
 * (mh__snapshot_replay_device), so nothing grows with the number of
 * entries but the output.
 *
 * Sharing: key strings, action names, frame dicts, frame lists (per stack)
 * and compile contexts are memoized once and referenced again with BINGET,
 * as PyTorch's own pickles do; trace-entry, block and segment dicts are never
 * shared (the viewer mutates them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "categories.h"
#include "pickle_write.h"
#include "snapshot_int.h"
#include "grow.h"

#define KEY_LIST(X)                                                                                \
    X(K_ACTION, "action")                                                                          \
    X(K_ADDR, "addr") X(K_SIZE, "size") X(K_STREAM, "stream") X(K_TIME_US, "time_us")              \
        X(K_FRAMES, "frames") X(K_COMPILE, "compile_context") X(K_USER, "user_metadata")           \
            X(K_DEVICE_FREE, "device_free") X(K_POOL_ID, "pool_id") X(K_NAME, "name")              \
                X(K_FILENAME, "filename") X(K_LINE, "line") X(K_DEVICE, "device")                  \
                    X(K_ADDRESS, "address") X(K_TOTAL, "total_size")                               \
                        X(K_ALLOCATED, "allocated_size") X(K_ACTIVE, "active_size")                \
                            X(K_REQUESTED, "requested_size") X(K_SEGTYPE, "segment_type")          \
                                X(K_SEGPOOL, "segment_pool_id") X(K_EXPANDABLE, "is_expandable")   \
                                    X(K_BLOCKS, "blocks") X(K_STATE, "state")                      \
                                        X(V_ALLOCATED, "active_allocated")                         \
                                            X(V_PENDING, "active_pending_free")                    \
                                                X(V_INACTIVE, "inactive") X(V_SMALL, "small")      \
                                                    X(V_LARGE, "large") X(K_STAGE, "stage")        \
                                                        X(V_START, "START") X(V_END, "END")    \
                                                            X(K_CATEGORY, "category")

enum {
#define X_ENUM(id, text) id,
    KEY_LIST(X_ENUM)
#undef X_ENUM
        K_COUNT
};
static const char *const key_text[] = {
#define X_TEXT(id, text) text,
    KEY_LIST(X_TEXT)
#undef X_TEXT
};

/* memo index + 1 per id (0 = not written yet), grown on demand */
struct memo_map {
    uint32_t *v;
    size_t cap;
};

struct wctx {
    struct mh__snapshot *s;
    struct mh__pw *w;
    uint32_t keys[K_COUNT + MH_EV_KIND_COUNT];
    uint32_t cats[MH__CAT_COUNT]; /* memo index + 1 of each category name */
    struct memo_map frames, stacks, strings;
    char last_um[512];
    uint32_t last_um_memo; /* + 1, 0 = none */
    struct mh__um_cache um;
    uint64_t dev_count; /* entries of the device list being written */
    int error;
    /* optional entry keys the imported snapshot had on every entry */
    int keys_compile, keys_user, keys_pool, keys_frames;
    /* segment streaming */
    struct mh_segment_view *segs;
    size_t nsegs, nseg_cap, next_seg;
    uint64_t seg_count;
    int seg_open;
    uint64_t blocks_in_seg;
};

static uint32_t *memo_slot(struct wctx *c, struct memo_map *m, uint32_t id)
{
    if (id >= m->cap) {
        if (id >= (1u << 28))
            return NULL; /* absurd id: write inline instead of memoizing */
        size_t ncap = m->cap ? m->cap : 1024;
        while (ncap <= id)
            ncap *= 2;
        uint32_t *p = realloc(m->v, ncap * sizeof *p);
        if (!p) {
            c->error = MH_ENOMEM;
            return NULL;
        }
        memset(p + m->cap, 0, (ncap - m->cap) * sizeof *p);
        m->v = p;
        m->cap = ncap;
    }
    return &m->v[id];
}

/* A constant string (key or value), memoized on first use. */
static void konst(struct wctx *c, int k)
{
    if (c->keys[k]) {
        mh__pw_get(c->w, c->keys[k] - 1);
        return;
    }
    mh__pw_cstr(c->w, k < K_COUNT ? key_text[k] : mh_event_kind_name((unsigned)(k - K_COUNT)));
    c->keys[k] = mh__pw_memoize(c->w) + 1;
}

static void write_frame(struct wctx *c, uint32_t id)
{
    uint32_t *slot = memo_slot(c, &c->frames, id);
    if (slot && *slot) {
        mh__pw_get(c->w, *slot - 1);
        return;
    }
    struct mh_frame f = {NULL, NULL, 0};
    mh_reader_frame(c->s->reader, id, &f);
    mh__pw_empty_dict(c->w);
    mh__pw_mark(c->w);
    konst(c, K_NAME);
    mh__pw_cstr(c->w, f.func ? f.func : "??");
    konst(c, K_FILENAME);
    mh__pw_cstr(c->w, f.file ? f.file : "??");
    konst(c, K_LINE);
    mh__pw_int(c->w, f.line);
    mh__pw_setitems(c->w);
    uint32_t idx = mh__pw_memoize(c->w);
    if (slot)
        *slot = idx + 1;
}

/* Whether a stack is memhist's note on a block live before recording (one
 * "before recording" frame, FORMAT.md "Frames"): torch gives such a block
 * no frames. */
static int before_recording(const struct wctx *c, const uint32_t *frames, size_t n)
{
    struct mh_frame f = {NULL, NULL, 0};
    return n == 1 && mh_reader_frame(c->s->reader, frames[0], &f) == 0 && f.file &&
           strcmp(f.file, "before recording") == 0;
}

/* The frames list of a stack, innermost first, shared per stack. */
static void write_frames(struct wctx *c, uint32_t stack)
{
    const uint32_t *frames;
    size_t n;
    if (stack == 0 || mh_reader_stack(c->s->reader, stack, &frames, &n) != 0 || n == 0 ||
        before_recording(c, frames, n)) {
        mh__pw_empty_list(c->w);
        return;
    }
    uint32_t *slot = memo_slot(c, &c->stacks, stack);
    if (slot && *slot) {
        mh__pw_get(c->w, *slot - 1);
        return;
    }
    uint64_t count = 0;
    mh__pw_list_begin(c->w);
    for (size_t i = 0; i < n; i++) {
        write_frame(c, frames[i]);
        mh__pw_list_item(c->w, &count);
    }
    mh__pw_list_end(c->w, count);
    uint32_t idx = mh__pw_memoize(c->w);
    slot = memo_slot(c, &c->stacks, stack); /* write_frame may have grown other maps only */
    if (slot)
        *slot = idx + 1;
}

/* An interned string of the file, memoized per id. */
static void write_string(struct wctx *c, uint32_t id)
{
    uint32_t *slot = memo_slot(c, &c->strings, id);
    if (slot && *slot) {
        mh__pw_get(c->w, *slot - 1);
        return;
    }
    const char *text = mh_reader_string(c->s->reader, id);
    mh__pw_cstr(c->w, text ? text : "");
    uint32_t idx = mh__pw_memoize(c->w);
    if (slot)
        *slot = idx + 1;
}

/* Text built into a buffer of `cap` bytes: `n` counts every byte appended,
 * those past the end too (as snprintf does). */
struct utext {
    char *buf;
    size_t cap, n;
};

static void put_text(struct utext *u, const char *s, size_t len)
{
    if (u->n + 1 < u->cap) {
        size_t room = u->cap - 1 - u->n, k = len < room ? len : room;
        memcpy(u->buf + u->n, s, k);
        u->buf[u->n + k] = '\0';
    }
    u->n += len;
}

static void put_step(struct utext *u, int64_t step)
{
    char digits[24];
    size_t k = sizeof digits;
    uint64_t v = (uint64_t)step;
    do
        digits[--k] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put_text(u, "step ", 5);
    put_text(u, digits + k, sizeof digits - k);
}

size_t mh__snapshot_user_text(const struct mh__snapshot *s, const struct mh__sentry *e, char *buf,
                              size_t cap)
{
    struct utext u = {buf, cap, 0};
    struct mh__sentry own_only = {.str = e->str, .step = -1, .phase = MH_PHASE_NONE};
    buf[0] = '\0';
    if (s->derived_steps) /* an imported snapshot: its own metadata only */
        e = &own_only;
    if (e->step >= 0)
        put_step(&u, e->step);
    if (e->phase != MH_PHASE_NONE) {
        const char *name = mh_phase_name(e->phase);
        if (u.n)
            put_text(&u, " ", 1);
        put_text(&u, name, strlen(name));
    }
    const char *own = e->str ? mh_reader_string(s->reader, e->str) : NULL;
    if (own && *own) {
        if (u.n)
            put_text(&u, " | ", 3);
        put_text(&u, own, strlen(own));
    }
    return u.n < cap ? u.n : cap - 1;
}

const char *mh__snapshot_user_cached(const struct mh__snapshot *s, struct mh__um_cache *c,
                                     const struct mh__sentry *e, size_t *len)
{
    uint64_t key[3] = {(uint64_t)e->step, e->phase, e->str};
    if (!c->have || memcmp(key, c->key, sizeof key) != 0) {
        c->len = mh__snapshot_user_text(s, e, c->text, sizeof c->text);
        memcpy(c->key, key, sizeof key);
        c->have = 1;
    }
    *len = c->len;
    return c->text;
}

static void write_user(struct wctx *c, const struct mh__sentry *e)
{
    size_t n;
    const char *text = mh__snapshot_user_cached(c->s, &c->um, e, &n);
    if (n == 0 && !c->keys_user)
        return;
    konst(c, K_USER);
    if (c->last_um_memo && strcmp(text, c->last_um) == 0) {
        mh__pw_get(c->w, c->last_um_memo - 1);
        return;
    }
    mh__pw_str(c->w, text, n);
    c->last_um_memo = mh__pw_memoize(c->w) + 1;
    memcpy(c->last_um, text, n + 1);
}

/* The "category" item of an entry (snapshot_category.c decided which). */
static void write_category(struct wctx *c, const struct mh__sentry *e)
{
    if (e->category >= MH__CAT_COUNT)
        return;
    konst(c, K_CATEGORY);
    if (c->cats[e->category]) {
        mh__pw_get(c->w, c->cats[e->category] - 1);
        return;
    }
    mh__pw_cstr(c->w, mh__category_name(e->category));
    c->cats[e->category] = mh__pw_memoize(c->w) + 1;
}

static void write_entry(struct wctx *c, const struct mh__sentry *e)
{
    struct mh__pw *w = c->w;
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    konst(c, K_ACTION);
    konst(c, K_COUNT + e->kind);
    konst(c, e->kind == MH_EV_OOM ? K_DEVICE_FREE : K_ADDR);
    mh__pw_uint(w, e->addr);
    konst(c, K_SIZE);
    mh__pw_uint(w, e->size);
    konst(c, K_STREAM);
    mh__pw_uint(w, e->stream);
    konst(c, K_TIME_US);
    mh__pw_uint(w, e->time_ns / 1000);
    if (e->stack || c->keys_frames) {
        konst(c, K_FRAMES);
        write_frames(c, e->stack);
    }
    if (e->str2) {
        konst(c, K_COMPILE);
        write_string(c, e->str2);
    } else if (c->keys_compile) {
        konst(c, K_COMPILE);
        mh__pw_cstr(w, "N/A");
    }
    write_user(c, e);
    if (e->pool[0] || e->pool[1] || c->keys_pool) {
        konst(c, K_POOL_ID);
        mh__pw_uint(w, e->pool[0]);
        mh__pw_uint(w, e->pool[1]);
        mh__pw_tuple2(w);
    }
    write_category(c, e);
    mh__pw_setitems(w);
}

void mh__snapshot_write_entry(struct mh__snapshot *s, const struct mh__sentry *e)
{
    struct wctx *c = s->wctx;
    write_entry(c, e);
    mh__pw_list_item(c->w, &c->dev_count);
}

/* One list per device index; each device's entries come from a replay. */
static void write_traces(struct wctx *c, int ndev)
{
    uint64_t outer = 0;
    mh__pw_list_begin(c->w);
    for (int d = 0; d < ndev; d++) {
        c->dev_count = 0;
        mh__pw_list_begin(c->w);
        if (d < c->s->ndev && c->s->dev[d].seen && !c->error) {
            int rc = mh__snapshot_replay_device(c->s, d);
            if (rc < 0)
                c->error = rc;
        }
        mh__pw_list_end(c->w, c->dev_count);
        mh__pw_list_item(c->w, &outer);
    }
    mh__pw_list_end(c->w, outer);
}

static void write_notes(struct wctx *c)
{
    uint64_t count = 0;
    mh__pw_list_begin(c->w);
    for (size_t i = 0; i < c->s->notes.len; i++) {
        const struct mh__sentry *e = mh__sring_at(&c->s->notes, i);
        int begin = e->kind == MH_EV_STEP_BEGIN || e->kind == MH_EV_RANGE_BEGIN;
        mh__pw_empty_dict(c->w);
        mh__pw_mark(c->w);
        konst(c, K_STAGE);
        konst(c, begin ? V_START : V_END);
        konst(c, K_NAME);
        if (e->kind == MH_EV_STEP_BEGIN || e->kind == MH_EV_STEP_END) {
            char name[32];
            snprintf(name, sizeof name, "step %lld", (long long)e->step);
            mh__pw_cstr(c->w, name);
        } else {
            const char *text = mh_reader_string(c->s->reader, e->str);
            mh__pw_cstr(c->w, text ? text : "");
        }
        konst(c, K_DEVICE);
        mh__pw_int(c->w, e->device);
        konst(c, K_TIME_US);
        mh__pw_uint(c->w, e->time_ns / 1000);
        mh__pw_setitems(c->w);
        mh__pw_list_item(c->w, &count);
    }
    mh__pw_list_end(c->w, count);
}

static void write_overflow(struct wctx *c)
{
    if (!c->s->info.overflowed)
        return;
    uint64_t most = c->s->opts.max_entries;
    for (int d = 0; !most && d < c->s->ndev; d++)
        most = c->s->dev[d].seen > most ? c->s->dev[d].seen : most;
    mh__pw_cstr(c->w, "trace_alloc_max_entries");
    mh__pw_uint(c->w, most);
    mh__pw_cstr(c->w, "trace_alloc_overflowed");
    mh__pw_bool(c->w, 1);
}

/* With the overflow keys written by us, leave out the recorded ones. */
static int skip_overflow(void *user, const char *key)
{
    const struct wctx *c = user;
    return c->s->info.overflowed &&
           (!strcmp(key, "trace_alloc_max_entries") || !strcmp(key, "trace_alloc_overflowed"));
}

static void write_settings(struct wctx *c)
{
    const struct mh_alloc_conf *conf = &c->s->conf;
    struct mh__pw *w = c->w;
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    const char *torch = mh_reader_meta(c->s->reader, "torch_allocator_settings");
    int n = torch ? mh__snapshot_settings_write(w, torch, skip_overflow, c) : 0;
    if (n < 0)
        c->error = n;
    if (n > 0) {
        write_overflow(c);
        mh__pw_setitems(w);
        return;
    }
    mh__pw_cstr(w, "PYTORCH_CUDA_ALLOC_CONF");
    mh__pw_cstr(w, c->s->conf_text);
    mh__pw_cstr(w, "max_split_size");
    mh__pw_int(w, conf->max_split_size ? (int64_t)conf->max_split_size : -1);
    mh__pw_cstr(w, "garbage_collection_threshold");
    mh__pw_float(w, conf->garbage_collection_threshold);
    mh__pw_cstr(w, "expandable_segments");
    mh__pw_bool(w, conf->expandable_segments);
    mh__pw_cstr(w, "pinned_num_register_threads");
    mh__pw_int(w, 1);
    mh__pw_cstr(w, "release_lock_on_cudamalloc");
    mh__pw_bool(w, 0);
    mh__pw_cstr(w, "pinned_use_cuda_host_register");
    mh__pw_bool(w, 0);
    mh__pw_cstr(w, "roundup_power2_divisions");
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    for (int i = 0; i < 16; i++) {
        char key[8];
        snprintf(key, sizeof key, "%u", 1u << i);
        mh__pw_cstr(w, key);
        mh__pw_int(w, conf->roundup_power2_divisions[i]);
    }
    mh__pw_setitems(w);
    write_overflow(c);
    mh__pw_setitems(w);
}

static int collect_segment(void *user, const struct mh_segment_view *seg)
{
    struct wctx *c = user;
    if (MH__GROW(c->segs, c->nsegs, c->nseg_cap, 64) < 0)
        return c->error = MH_ENOMEM;
    c->segs[c->nsegs++] = *seg;
    return 0;
}

static void open_segment(struct wctx *c, const struct mh_segment_view *g)
{
    struct mh__pw *w = c->w;
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    konst(c, K_DEVICE);
    mh__pw_int(w, g->device);
    konst(c, K_ADDRESS);
    mh__pw_uint(w, g->address);
    konst(c, K_TOTAL);
    mh__pw_uint(w, g->size);
    konst(c, K_ALLOCATED);
    mh__pw_uint(w, g->allocated);
    konst(c, K_ACTIVE);
    mh__pw_uint(w, g->active);
    konst(c, K_REQUESTED);
    mh__pw_uint(w, g->requested);
    konst(c, K_STREAM);
    mh__pw_uint(w, g->stream);
    konst(c, K_SEGTYPE);
    konst(c, g->small_pool ? V_SMALL : V_LARGE);
    konst(c, K_SEGPOOL);
    mh__pw_uint(w, g->pool[0]);
    mh__pw_uint(w, g->pool[1]);
    mh__pw_tuple2(w);
    konst(c, K_EXPANDABLE);
    mh__pw_bool(w, g->expandable);
    konst(c, K_FRAMES);
    write_frames(c, g->stack);
    konst(c, K_BLOCKS);
    mh__pw_list_begin(w);
    c->seg_open = 1;
    c->blocks_in_seg = 0;
    c->s->info.segments++;
}

static void close_segment(struct wctx *c)
{
    mh__pw_list_end(c->w, c->blocks_in_seg);
    mh__pw_setitems(c->w);
    mh__pw_list_item(c->w, &c->seg_count);
    c->seg_open = 0;
}

/* Opens segments in order up to the one at `address` (earlier ones, if any,
 * have no blocks). */
static void advance_to(struct wctx *c, uint64_t address)
{
    if (c->seg_open && c->segs[c->next_seg - 1].address == address)
        return;
    if (c->seg_open)
        close_segment(c);
    while (c->next_seg < c->nsegs) {
        const struct mh_segment_view *g = &c->segs[c->next_seg++];
        open_segment(c, g);
        if (g->address == address)
            return;
        close_segment(c);
    }
}

static int write_block(void *user, const struct mh_segment_view *seg, const struct mh_block_view *b)
{
    struct wctx *c = user;
    static const int states[] = {V_INACTIVE, V_ALLOCATED, V_PENDING};
    advance_to(c, seg->address);
    struct mh__pw *w = c->w;
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    konst(c, K_ADDRESS);
    mh__pw_uint(w, b->address);
    konst(c, K_SIZE);
    mh__pw_uint(w, b->size);
    konst(c, K_REQUESTED);
    mh__pw_uint(w, b->requested);
    konst(c, K_STATE);
    konst(c, states[b->state <= MH_BLOCK_PENDING_FREE ? b->state : 0]);
    konst(c, K_FRAMES);
    write_frames(c, b->state == MH_BLOCK_INACTIVE ? 0 : b->stack);
    mh__pw_setitems(w);
    mh__pw_list_item(w, &c->blocks_in_seg);
    c->s->info.blocks++;
    return 0;
}

/* The segments list, devices in increasing order; returns 1 + the highest
 * device index written (0 if none). */
static int write_segments(struct wctx *c)
{
    const struct mh_model *m = c->s->model;
    int ndev = 0;
    c->seg_count = 0;
    c->s->info.segments = c->s->info.blocks = 0;
    mh__pw_list_begin(c->w);
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        int d = mh_model_device_at(m, i);
        if (d < 0 || (c->s->opts.only_device && d != c->s->opts.device))
            continue;
        c->nsegs = c->next_seg = 0;
        c->seg_open = 0;
        mh_model_foreach_segment(m, d, collect_segment, c);
        if (c->nsegs && d + 1 > ndev)
            ndev = d + 1;
        mh_model_foreach_block(m, d, write_block, c);
        if (c->seg_open)
            close_segment(c);
        advance_to(c, UINT64_MAX); /* segments without blocks */
        if (c->seg_open)
            close_segment(c);
    }
    mh__pw_list_end(c->w, c->seg_count);
    return ndev;
}

int mh__snapshot_write(struct mh__snapshot *s, struct mh__sink *sink)
{
    struct wctx *c = calloc(1, sizeof *c);
    struct mh__pw *w = malloc(sizeof *w);
    if (!c || !w) {
        free(c);
        free(w);
        return MH_ENOMEM;
    }
    c->s = s;
    c->w = w;
    s->wctx = c;
    const char *keys = mh_reader_meta(s->reader, "torch_entry_keys");
    c->keys_compile = keys && strstr(keys, "compile_context");
    c->keys_user = keys && strstr(keys, "user_metadata");
    c->keys_pool = keys && strstr(keys, "pool_id");
    c->keys_frames = keys && strstr(keys, "frames");
    mh__pw_init(w, sink);
    mh__pw_empty_dict(w);
    mh__pw_mark(w);
    mh__pw_cstr(w, "segments");
    int ndev = write_segments(c);
    if (ndev < s->ndev)
        ndev = s->ndev;
    s->info.devices = ndev;
    mh__pw_cstr(w, "device_traces");
    write_traces(c, ndev);
    mh__pw_cstr(w, "allocator_settings");
    write_settings(c);
    mh__pw_cstr(w, "external_annotations");
    write_notes(c);
    if (mh_reader_meta(s->reader, "torch_host_memory")) { /* torch 2.14+: pinned host memory */
        mh__pw_cstr(w, "host_segments");
        mh__pw_empty_list(w);
        mh__pw_cstr(w, "host_traces");
        mh__pw_empty_list(w);
    }
    mh__pw_setitems(w);
    int rc = mh__pw_finish(w);
    if (!rc && c->error)
        rc = c->error;
    free(c->frames.v);
    free(c->stacks.v);
    free(c->strings.v);
    free(c->segs);
    free(c);
    free(w);
    s->wctx = NULL;
    return rc;
}
