/* snapshot_itrace.c - snapshot import: converts `device_traces` entries and
 * `external_annotations` into flat arrays (snapshot_import_int.h), reading the
 * "step N phase" user metadata memhist writes back into step and phase hints,
 * and gives entries without time_us (torch < 2.2) increasing synthetic times.
 * Also the pointer map that caches interned frames and stacks per node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

#define MAX_DEVICES 4096
#define SYNTHETIC_BASE_NS 1000000000ull /* 1 s after the epoch */

/* ---- pointer map ---------------------------------------------------------- */

struct mh__ptrmap {
    size_t cap, len;
    struct {
        const void *k;
        uint32_t v;
    } slot[];
};

static size_t ptr_hash(const void *p, size_t cap)
{
    return (size_t)(((uint64_t)(uintptr_t)p >> 3) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

int mh__ptrmap_get(const struct mh__ptrmap *m, const void *key, uint32_t *val)
{
    if (!m)
        return MH_ENOTFOUND;
    for (size_t i = ptr_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slot[i].k)
            return MH_ENOTFOUND;
        if (m->slot[i].k == key) {
            *val = m->slot[i].v;
            return 0;
        }
    }
}

static int ptrmap_grow(struct mh__ptrmap **pm)
{
    struct mh__ptrmap *old = *pm;
    size_t cap = old ? old->cap * 2 : 1024;
    struct mh__ptrmap *m = calloc(1, sizeof *m + cap * sizeof m->slot[0]);
    if (!m)
        return MH_ENOMEM;
    m->cap = cap;
    for (size_t i = 0; old && i < old->cap; i++)
        if (old->slot[i].k)
            mh__ptrmap_put(&m, old->slot[i].k, old->slot[i].v);
    free(old);
    *pm = m;
    return 0;
}

int mh__ptrmap_put(struct mh__ptrmap **pm, const void *key, uint32_t val)
{
    if ((!*pm || 2 * ((*pm)->len + 1) > (*pm)->cap) && ptrmap_grow(pm))
        return MH_ENOMEM;
    struct mh__ptrmap *m = *pm;
    size_t i = ptr_hash(key, m->cap);
    while (m->slot[i].k && m->slot[i].k != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->slot[i].k)
        m->len++;
    m->slot[i].k = key;
    m->slot[i].v = val;
    return 0;
}

void mh__ptrmap_free(struct mh__ptrmap *m)
{
    free(m);
}

/* ---- user metadata ---------------------------------------------------------- */

static int phase_at(const char *s, size_t n, size_t *len)
{
    for (int p = MH_PHASE_FORWARD; p < MH_PHASE_COUNT; p++) {
        const char *name = mh_phase_name((unsigned)p);
        size_t k = strlen(name);
        if (n >= k && memcmp(s, name, k) == 0 && (n == k || s[k] == ' ')) {
            *len = k;
            return p;
        }
    }
    return -1;
}

/* "step N[ phase][ | rest]" or "phase[ | rest]" as memhist writes it. Returns
 * 1 with the hints and the offset of the rest (n if none), 0 if the text is
 * plain metadata. */
static int parse_hints(const char *s, size_t n, int64_t *step, int *phase, size_t *rest)
{
    size_t i = 0, k;
    *step = INT64_MIN;
    *phase = -1;
    if (n > 5 && memcmp(s, "step ", 5) == 0) {
        i = 5;
        int neg = i < n && s[i] == '-';
        i += (size_t)neg;
        size_t d0 = i;
        int64_t v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && i - d0 < 18)
            v = v * 10 + (s[i++] - '0');
        if (i == d0)
            return 0;
        *step = neg ? -v : v;
        *phase = MH_PHASE_NONE; /* a step without a phase: between phases */
        if (i + 1 < n && s[i] == ' ' && s[i + 1] != '|') {
            if ((*phase = phase_at(s + i + 1, n - i - 1, &k)) < 0)
                return 0;
            i += 1 + k;
        }
    } else if ((*phase = phase_at(s, n, &k)) >= 0) {
        i = k;
    } else {
        return 0;
    }
    if (i == n) {
        *rest = n;
        return 1;
    }
    if (n - i >= 3 && memcmp(s + i, " | ", 3) == 0) {
        *rest = i + 3;
        return 1;
    }
    return 0;
}

/* A dict of metadata as "key: value, ..." text. */
static size_t dict_text(const struct mh__pv *d, char *buf, size_t cap)
{
    size_t used = 0;
    for (uint32_t i = 0; i < d->n && used + 1 < cap; i++) {
        const struct mh__pv *k = d->u.items[2 * i], *v = d->u.items[2 * i + 1];
        int64_t iv;
        double fv;
        int w;
        const char *sep = i ? ", " : "";
        int kl = k->type == MH__PV_STR ? (int)k->n : 1;
        const char *ks = k->type == MH__PV_STR ? k->u.s : "?";
        if (v->type == MH__PV_STR)
            w = snprintf(buf + used, cap - used, "%s%.*s: %.*s", sep, kl, ks, (int)v->n, v->u.s);
        else if (mh__pv_i64(v, &iv) == 0)
            w = snprintf(buf + used, cap - used, "%s%.*s: %lld", sep, kl, ks, (long long)iv);
        else if (mh__pv_f64(v, &fv) == 0)
            w = snprintf(buf + used, cap - used, "%s%.*s: %g", sep, kl, ks, fv);
        else
            w = snprintf(buf + used, cap - used, "%s%.*s: <%s>", sep, kl, ks, mh__pv_type_name(v));
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return used < cap ? used : cap - 1;
}

static int user_metadata(struct mh__imp *im, const struct mh__pv *v, struct mh__ient *e)
{
    const char *s;
    size_t n, rest;
    char buf[1024];
    int64_t step;
    int phase;
    if (!v || v->type == MH__PV_NONE)
        return 0;
    if (v->type == MH__PV_DICT) {
        n = dict_text(v, buf, sizeof buf);
        s = buf;
    } else if (v->type == MH__PV_STR) {
        s = v->u.s;
        n = v->n;
        if (parse_hints(s, n, &step, &phase, &rest)) {
            e->step_hint = step;
            e->phase_hint = (int8_t)phase;
            s += rest;
            n -= rest;
        }
    } else {
        return 0;
    }
    if (n == 0)
        return 0;
    int64_t id = mh_writer_intern_string(im->w, s, n);
    if (id < 0)
        return (int)id;
    e->str = (uint32_t)id;
    return 0;
}

/* ---- entries ---------------------------------------------------------------- */

static int entry_kind(const struct mh__pv *action)
{
    char name[32];
    if (!action || action->type != MH__PV_STR || action->n >= sizeof name)
        return -1;
    memcpy(name, action->u.s, action->n);
    name[action->n] = '\0';
    int k = mh_event_kind_from_name(name);
    return k >= 0 && k <= MH_EV_SNAPSHOT ? k : -1;
}

static int conv_entry(struct mh__imp *im, const struct mh__pv *d, const char *path,
                      struct mh__ient *e, int *has_time)
{
    memset(e, 0, sizeof *e);
    e->phase_hint = -1;
    e->step_hint = INT64_MIN;
    int kind = entry_kind(mh__pv_get(d, "action"));
    if (kind < 0)
        return 1; /* annotate, or an action this version does not know: skipped */
    e->kind = (uint8_t)kind;
    const char *addr_key =
        kind == MH_EV_OOM && mh__pv_get(d, "device_free") ? "device_free" : "addr";
    uint64_t us = 0;
    const struct mh__pv *t = mh__pv_get(d, "time_us"), *cc = mh__pv_get(d, "compile_context");
    int rc = mh__imp_opt_u64(im, d, addr_key, path, 0, &e->addr);
    if (!rc)
        rc = mh__imp_opt_u64(im, d, "size", path, 0, &e->size);
    if (!rc)
        rc = mh__imp_opt_u64(im, d, "stream", path, 0, &e->stream);
    if (!rc)
        rc = mh__imp_opt_u64(im, d, "time_us", path, 0, &us);
    if (!rc)
        rc = mh__imp_frames(im, mh__pv_get(d, "frames"), path, &e->stack);
    if (!rc && kind == MH_EV_ALLOC) {
        uint64_t flags = mh__imp_flags(mh__pv_get(d, "frames"));
        e->backward = (flags & MH__H_BACKWARD) != 0;
        e->program = (flags & MH__H_PROGRAM) != 0;
    }
    im->entry_keys &= (cc ? MH__IK_COMPILE : 0) | (mh__pv_get(d, "user_metadata") ? MH__IK_USER : 0) |
                      (mh__pv_get(d, "pool_id") ? MH__IK_POOL : 0) |
                      (mh__pv_get(d, "frames") ? MH__IK_FRAMES : 0);
    if (!rc && mh__pv_get(d, "pool_id")) {
        rc = mh__imp_pool(im, mh__pv_get(d, "pool_id"), path, e->pool);
        e->has_pool = 1;
    }
    if (!rc)
        rc = user_metadata(im, mh__pv_get(d, "user_metadata"), e);
    if (rc)
        return rc;
    if (cc && cc->type == MH__PV_STR && cc->n && !mh__pv_is_str(cc, "N/A")) {
        int64_t id = mh_writer_intern_string(im->w, cc->u.s, cc->n);
        if (id < 0)
            return (int)id;
        e->str2 = (uint32_t)id;
    }
    *has_time = t && t->type != MH__PV_NONE && us <= UINT64_MAX / 1000;
    e->time_ns = us * 1000;
    return 0;
}

/* The trace of device dev, created if new; NULL with the error set. */
static struct mh__itrace *trace_of(struct mh__imp *im, int dev)
{
    if (dev >= im->tracecap) {
        int cap = im->tracecap ? im->tracecap : 8;
        while (cap <= dev)
            cap *= 2;
        struct mh__itrace *p = realloc(im->traces, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        memset(p + im->tracecap, 0, (size_t)(cap - im->tracecap) * sizeof *p);
        im->traces = p;
        im->tracecap = cap;
    }
    if (dev >= im->ndev)
        im->ndev = dev + 1;
    return &im->traces[dev];
}

/* Entries lacking time_us follow the previous one by 1 us. */
int mh__imp_entry(struct mh__imp *im, int dev, uint64_t i, const struct mh__pv *d)
{
    char path[64];
    snprintf(path, sizeof path, "device_traces[%d][%llu]", dev, (unsigned long long)i);
    if (d->type != MH__PV_DICT)
        return mh__imp_fail(im, MH_EFORMAT, "%s is %s, expected a dict", path,
                            mh__pv_type_name(d));
    int has_time = 0, rc = mh__imp_visit(im, d, path);
    struct mh__ient e;
    if (!rc)
        rc = conv_entry(im, d, path, &e, &has_time);
    if (rc == 1) {
        im->info->skipped++;
        return 0;
    }
    if (rc)
        return rc;
    struct mh__itrace *t = trace_of(im, dev);
    if (!t)
        return MH_ENOMEM;
    if (!t->n) {
        t->first = im->store.total;
        t->prev_ns = SYNTHETIC_BASE_NS - 1000;
    } else if (t->first + t->n != im->store.total) {
        return MH__PS_WHOLE; /* another device's entries came in between */
    }
    if (!has_time) {
        e.time_ns = t->prev_ns + 1000;
        im->info->synthetic_times = 1;
    }
    t->prev_ns = e.time_ns;
    im->step_hints |= e.step_hint != INT64_MIN;
    if ((rc = mh__istore_add(&im->store, &e)))
        return rc == MH_EIO ? mh__imp_fail(im, rc, "writing the trace to a temporary file: %s",
                                           mh_strerror(rc))
                            : rc;
    t->n++;
    im->info->entries++;
    return 0;
}

static int conv_trace(struct mh__imp *im, const struct mh__pv *list, int dev)
{
    char path[64];
    snprintf(path, sizeof path, "device_traces[%d]", dev);
    if (!list || list->type == MH__PV_NONE)
        return 0;
    if (!mh__pv_is_seq(list))
        return mh__imp_fail(im, MH_EFORMAT, "%s is %s, expected a list", path,
                            mh__pv_type_name(list));
    int rc = mh__imp_visit(im, list, path);
    for (uint32_t i = 0; i < list->n && !rc; i++)
        rc = mh__imp_entry(im, dev, i, mh__pv_at(list, i));
    return rc;
}

int mh__imp_convert_traces(struct mh__imp *im, const struct mh__pv *traces)
{
    if (!traces || traces->type == MH__PV_NONE)
        return 0;
    if (!mh__pv_is_seq(traces))
        return mh__imp_fail(im, MH_EFORMAT, "'device_traces' is %s, expected a list",
                            mh__pv_type_name(traces));
    if (traces->n > MAX_DEVICES)
        return mh__imp_fail(im, MH_ELIMIT, "'device_traces' lists %u devices", traces->n);
    if (traces->n && !trace_of(im, (int)traces->n - 1))
        return MH_ENOMEM;
    im->info->devices = im->ndev;
    for (uint32_t d = 0; d < traces->n; d++) {
        int rc = conv_trace(im, mh__pv_at(traces, d), (int)d);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- annotations ------------------------------------------------------------ */

static int conv_note(struct mh__imp *im, const struct mh__pv *d, struct mh__inote *n)
{
    const struct mh__pv *name = mh__pv_get(d, "name"), *stage = mh__pv_get(d, "stage");
    uint64_t us, dev;
    memset(n, 0, sizeof n[0]);
    if (!name || name->type != MH__PV_STR || !stage || !mh__pv_get(d, "time_us") ||
        mh__pv_u64(mh__pv_get(d, "time_us"), &us) || us > UINT64_MAX / 1000)
        return 1;
    n->begin = mh__pv_is_str(stage, "START");
    if (!n->begin && !mh__pv_is_str(stage, "END"))
        return 1;
    n->time_ns = us * 1000;
    n->device = mh__pv_u64(mh__pv_get(d, "device"), &dev) == 0 && dev < MAX_DEVICES ? (int)dev : 0;
    char text[32];
    if (name->n > 5 && name->n < sizeof text && memcmp(name->u.s, "step ", 5) == 0) {
        memcpy(text, name->u.s, name->n);
        text[name->n] = '\0';
        char *end;
        long long v = strtoll(text + 5, &end, 10);
        if (*end == '\0' && end != text + 5) {
            n->is_step = 1;
            n->step = v;
            return 0;
        }
    }
    n->range_kind = mh__imp_range_kind(name->u.s, name->n, &n->step);
    int64_t id = mh_writer_intern_string(im->w, name->u.s, name->n);
    if (id < 0)
        return (int)id;
    n->str = (uint32_t)id;
    return 0;
}

int mh__imp_note(struct mh__imp *im, const struct mh__pv *d)
{
    if (d->type != MH__PV_DICT)
        return 0;
    if (im->nnotes == im->notecap) {
        size_t cap = im->notecap ? 2 * im->notecap : 64;
        struct mh__inote *p = realloc(im->notes, cap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        im->notes = p;
        im->notecap = cap;
    }
    int rc = conv_note(im, d, &im->notes[im->nnotes]);
    if (rc < 0)
        return rc;
    if (rc == 0)
        im->nnotes++;
    im->info->annotations = im->nnotes;
    return 0;
}

int mh__imp_convert_notes(struct mh__imp *im, const struct mh__pv *notes)
{
    if (!mh__pv_is_seq(notes))
        return 0;
    for (uint32_t i = 0; i < notes->n; i++) {
        int rc = mh__imp_note(im, mh__pv_at(notes, i));
        if (rc)
            return rc;
    }
    return 0;
}
