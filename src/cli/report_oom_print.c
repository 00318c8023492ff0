/* report_oom_print.c - text and JSON forms of `memhist oom` (see oom_explain.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "oom_json.h"
#include "printers.h"
#include "stacks.h"

static const char *verdict_text(const struct mh__oom_case *c, char *buf, size_t len)
{
    char b[4][32];
    const struct mh_oom_info *o = &c->oom;
    switch (c->verdict) {
    case MH__OOM_VERDICT_FRAGMENTATION:
        snprintf(buf, len,
                 "FRAGMENTATION: allocated %s + request %s fit in the %s the allocator could use, "
                 "but the largest free block on the request's stream is %s",
                 mh__bytes_text(o->allocated, b[0]), mh__bytes_text(o->request, b[1]),
                 mh__bytes_text(o->reserved + o->device_free, b[2]),
                 mh__bytes_text(o->largest_free_same_stream, b[3]));
        break;
    case MH__OOM_VERDICT_CROSS_STREAM:
        snprintf(buf, len,
                 "CROSS-STREAM CACHING: a free block of %s or more is cached for another stream, "
                 "which this stream cannot use",
                 mh__bytes_text(o->request, b[0]));
        break;
    case MH__OOM_VERDICT_EXHAUSTION:
        snprintf(buf, len,
                 "EXHAUSTION: live allocations %s + request %s exceed the %s the allocator could "
                 "use; settings cannot fix this, less must be live",
                 mh__bytes_text(o->allocated, b[0]), mh__bytes_text(o->request, b[1]),
                 mh__bytes_text(o->reserved + o->device_free, b[2]));
        break;
    default: snprintf(buf, len, "no failure (explaining the allocated peak)");
    }
    return buf;
}

static void text_state(const struct mh__analysis *a, const struct mh__oom_case *c)
{
    const struct mh_oom_info *o = &c->oom;
    char b[4][32];
    if (c->verdict != MH__OOM_VERDICT_NONE)
        printf("  request        %s (rounded) in the %s pool on stream %#" PRIx64 "\n",
               mh__bytes_text(o->request, b[0]), c->small_pool ? "small" : "large", o->stream);
    if (c->capacity == 0) /* no device size recorded and no CUDA free figure */
        printf("  device         capacity unknown");
    else
        printf("  device         %s%s", mh__bytes_text(c->capacity, b[0]),
               c->capacity_estimated ? " (estimated: reserved + CUDA free)" : " total");
    if (c->verdict != MH__OOM_VERDICT_NONE)
        printf("; CUDA reported %s free", mh__bytes_text(o->device_free, b[1]));
    printf("\n  reserved       %s = allocated %s + reserved but unallocated %s\n",
           mh__bytes_text(o->reserved, b[0]), mh__bytes_text(o->allocated, b[1]),
           mh__bytes_text(o->reserved - o->allocated, b[2]));
    if (c->outside)
        printf("  outside the allocator %s (device total - CUDA free - reserved)\n",
               mh__bytes_text(c->outside, b[0]));
    for (size_t i = 0; i < c->nfree; i++)
        printf("  free blocks    stream %#" PRIx64 " %s pool: largest %s, %s in %" PRIu64
               " blocks%s\n",
               c->free[i].stream, c->free[i].small_pool ? "small" : "large",
               mh__bytes_text(c->free[i].largest, b[0]), mh__bytes_text(c->free[i].total, b[1]),
               c->free[i].blocks,
               c->verdict != MH__OOM_VERDICT_NONE && c->free[i].stream == o->stream &&
                       c->free[i].small_pool == c->small_pool
                   ? "  <- the request's"
                   : "");
    (void)a;
}

static void text_live(const struct mh__analysis *a, const struct mh__oom_case *c, size_t top)
{
    char b[32];
    printf("  live: %s in %" PRIu64 " blocks; by layer:\n", mh__bytes_text(c->live_bytes, b),
           c->live_count);
    for (size_t i = 0; i < c->nlayers && i < top; i++)
        printf("    %11s  %s\n", mh__bytes_text(c->layers[i].bytes, b), c->layers[i].name);
    printf("  by stack:\n");
    /* stacks that differ only past their label (callers of one line) are one
     * row, printed where the first of them is */
    char(*labels)[512] = calloc(c->nstacks ? c->nstacks : 1, sizeof *labels);
    for (size_t i = 0; labels && i < c->nstacks; i++)
        mh__stack_label(a->rp.reader, c->stacks[i].stack, labels[i], sizeof labels[i]);
    for (size_t i = 0; labels && i < c->nstacks; i++) {
        size_t first = 0;
        while (strcmp(labels[first], labels[i]) != 0)
            first++;
        if (first < i)
            continue; /* printed with an earlier row */
        uint64_t bytes = 0;
        for (size_t k = i; k < c->nstacks; k++)
            bytes += strcmp(labels[k], labels[i]) == 0 ? c->stacks[k].bytes : 0;
        printf("    %11s  %s\n", mh__bytes_text(bytes, b), labels[i]);
    }
    free(labels);
}

static void text_suggestions(const struct mh__oom_case *c)
{
    char b[3][32];
    size_t nl;
    const struct mh__layer_stats *st = mh__layers_list(c->ly, &nl);
    char label[256];
    printf("  suggestions, %s:\n",
           mh__replay_check_text(c->replay_match < 0 ? NULL : &c->baseline, label, sizeof label));
    if (c->mid_run || c->baseline.seeded_segments)
        printf("    %s\n", mh__replay_seed_text(&c->baseline, label, sizeof label));
    for (size_t i = 0; i < c->nsugg; i++) {
        const struct mh__suggestion *s = &c->sugg[i];
        if (s->in_effect) {
            printf("    %-56s already in effect in this run\n", s->setting);
            continue;
        }
        if (!s->ok) {
            printf("    %-56s could not be replayed\n", s->setting);
            continue;
        }
        const char *v = c->verdict == MH__OOM_VERDICT_NONE ? ""
                        : s->ooms                          ? "still OOM;  "
                                                           : "OOM gone;   ";
        printf("    %-56s %speak reserved %s (recorded %s)%s\n", s->setting, v,
               mh__bytes_text(s->peak_reserved, b[0]),
               mh__bytes_text(c->recorded_peak_reserved, b[1]),
               s->peak_reserved > c->recorded_peak_reserved ? ": worse" : "");
    }
    if (c->nplan == 0) {
        printf("    activation checkpointing: no layer with saved activations known from a "
               "completed backward pass is live here\n");
        return;
    }
    if (c->verdict == MH__OOM_VERDICT_NONE)
        printf("    activation checkpointing of %zu layer%s: estimated peak allocated %s -> %s "
               "(memhist layers has the details):\n      ",
               c->nplan, c->nplan == 1 ? "" : "s", mh__bytes_text(c->peak_allocated, b[0]),
               mh__bytes_text(c->plan_peak_after, b[1]));
    else
        printf("    activation checkpointing of %zu layer%s: frees about %s of activations live at "
               "the OOM (allocated would be %s; %s):\n      ",
               c->nplan, c->nplan == 1 ? "" : "s", mh__bytes_text(c->plan_freed, b[0]),
               mh__bytes_text(c->oom.allocated - c->plan_freed, b[1]),
               c->plan_fits ? "the request would then fit" : "still not enough");
    for (size_t i = 0; i < c->nplan; i++)
        printf("%s%s", i ? ", " : "", st[c->plan[i]].name);
    printf("\n");
}

void mh__oom_print_text(const struct mh__analysis *a, const struct mh__oom_case *c,
                        const struct mh__oom_opts *o, size_t number, size_t count)
{
    char t[32], s[24], v[512];
    uint64_t t0 = a->rp.t0_ns;
    if (c->verdict == MH__OOM_VERDICT_NONE)
        printf("%s device %d: allocated peak at %s (%s)\n", a->rp.path, c->device,
               mh__cli_duration(c->oom.time_ns - t0, t), mh__step_text(c->oom.step, s));
    else
        printf("%s device %d: OOM %zu of %zu at %s (%s)\n", a->rp.path, c->device, number, count,
               mh__cli_duration(c->oom.time_ns - t0, t), mh__step_text(c->oom.step, s));
    text_state(a, c);
    printf("  verdict: %s\n", verdict_text(c, v, sizeof v));
    text_live(a, c, (size_t)o->top);
    text_suggestions(c);
    printf("\n");
}

static void json_stack_label(void *ctx, struct mh__json *j, uint32_t stack)
{
    char label[512];
    mh__json_kv_string(j, "stack", mh__stack_label(ctx, stack, label, sizeof label));
}

void mh__oom_print_json(struct mh__json *j, const struct mh__analysis *a,
                        const struct mh__oom_case *c, const struct mh__oom_opts *o)
{
    const struct mh__oom_json_opts jo = {(size_t)o->top, json_stack_label, (void *)a->rp.reader};
    mh__oom_case_json(j, c, &jo);
}
