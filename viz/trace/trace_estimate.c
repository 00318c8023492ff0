/* trace_estimate.c - the size of the Chrome trace the write pass will
 * produce, worked out during the scan (trace_writer.c) without formatting
 * anything: each event's JSON is the fixed text of its shape in
 * trace_events.c plus the digits of its numbers and the length of its
 * names, and the memory counters are counted as the writer emits them (the
 * samples of each device and microsecond, trace_int.h). With --pretty each
 * key adds its line break and indent. Within a few percent of the output;
 * the stack labels of the rare segment instants are taken at a typical
 * length. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_int.h"

/* The fixed text of each shape: the JSON with every number and free-form
 * string left out, and the comma that separates it from the next. */
#define LEN(s) (sizeof(s) - 1)
#define BEGIN_FIXED LEN("{\"ph\":\"\",\"cat\":\"\",\"name\":\"\",\"pid\":,\"tid\":,\"ts\":,")
#define COUNTER_FIXED                                                                       \
    LEN("{\"ph\":\"C\",\"cat\":\"gpu_memory\",\"name\":\"GPU  memory\",\"pid\":,\"tid\":0," \
        "\"ts\":,\"args\":{\"allocated\":,\"reserved\":,\"outside allocator\":,\"total\":}},")
#define INSTANT_EXTRA LEN(",\"s\":\"t\"")
#define MEMORY_ARGS LEN("\"args\":{\"addr\":\"0x\",\"bytes\":,\"stream\":\"0x\"}}")
#define STACK_TYPICAL 48 /* ,"stack":"file.py:123 function" */
#define OOM_TOTAL 420
#define DEVICE_ARGS LEN(",\"dur\":,\"args\":{\"device\":,\"stream\":,\"correlation\":}}")
#define API_ARGS LEN(",\"dur\":,\"args\":{\"cbid\":,\"correlation\":}}")
#define SLICE_TAIL LEN(",\"dur\":}")
#define MARK_TAIL LEN("}")

/* What --pretty adds to an event of `top` keys, `args` of them in "args":
 * a line and indent per key (6 spaces, 8 in args) and a space after each
 * colon, and lines for the braces. */
static uint64_t layout(const struct mh__trace_estimate *e, unsigned top, unsigned args)
{
    if (!e->pretty)
        return 0;
    return 5 + 8u * top + (args ? 10u * args + 7 : 0) + 5;
}

static unsigned digits(uint64_t v)
{
    unsigned n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static unsigned sdigits(int64_t v)
{
    return v < 0 ? 1 + digits((uint64_t)(-(v + 1)) + 1) : digits((uint64_t)v);
}

/* "123.456": microseconds with three decimals from the base. */
static unsigned ts_len(const struct mh__trace_estimate *e, uint64_t ns)
{
    uint64_t rel = ns >= e->base_ns ? ns - e->base_ns : e->base_ns - ns;
    return (ns < e->base_ns) + digits(rel / 1000) + 4;
}

static size_t name_len(const struct mh__trace_estimate *e, uint32_t id, size_t dflt)
{
    const char *s = id ? mh_reader_string(e->r, id) : NULL;
    return s && *s ? strlen(s) : dflt;
}

void mh__trace_estimate_begin(struct mh__trace_estimate *e, const struct mh_reader *r,
                              const struct mh_model *m, int pretty)
{
    memset(e, 0, sizeof *e);
    e->r = r;
    e->m = m;
    e->pretty = pretty;
    const char *pid = mh_reader_meta(r, "pid");
    char *end;
    long long v = pid ? strtoll(pid, &end, 10) : 0;
    e->host_pid_digits = pid && *end == '\0' && v > MH__TRACE_MAX_DEVICES ? sdigits(v) : 7;
}

/* The samples of a device's pending microsecond, as trace_events.c writes them. */
static uint64_t counter_taken(struct mh__trace_estimate *e, int device)
{
    struct mh__counter_sample s[3];
    size_t n = mh__counter_take(&e->counters[device], s);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mh_mem_stats *st = &s[i].st;
        bytes += COUNTER_FIXED + 2 * sdigits(device) + ts_len(e, s[i].time_ns) +
                 digits(st->allocated) + digits(st->reserved) + digits(st->driver_outside) +
                 digits(st->reserved + st->driver_outside) + layout(e, 7, 4);
    }
    return bytes;
}

/* Samples per device and microsecond, as trace_events.c's counter(). */
static uint64_t counter(struct mh__trace_estimate *e, int device, uint64_t ns)
{
    struct mh_mem_stats st;
    if (device < 0 || device >= MH__TRACE_MAX_DEVICES)
        return 0;
    struct mh__counter_state *c = &e->counters[device];
    int64_t us = (int64_t)(ns - e->base_ns) / 1000;
    uint64_t written = mh__counter_ends(c, us) ? counter_taken(e, device) : 0;
    if (mh_model_stats(e->m, device, &st) != 0)
        memset(&st, 0, sizeof st);
    mh__counter_add(c, us, ns, &st);
    return written;
}

static uint64_t begin_len(const struct mh__trace_estimate *e, size_t ph_cat_name, unsigned pid,
                          int64_t tid, uint64_t ns)
{
    return BEGIN_FIXED + ph_cat_name + pid + sdigits(tid) + ts_len(e, ns);
}

static uint64_t memory_instant(struct mh__trace_estimate *e, const struct mh_event *ev)
{
    unsigned pid = ev->device >= 0 ? sdigits(ev->device) : e->host_pid_digits;
    uint64_t n = begin_len(e, 1 + 10 + 13, pid, 2147483000, ev->time_ns) + INSTANT_EXTRA +
                 MEMORY_ARGS + 2 * 12 + digits(ev->size);
    if (ev->correlation)
        n += LEN(",\"correlation\":") + digits(ev->correlation);
    return n + (ev->stack ? STACK_TYPICAL : 0) +
           layout(e, 8, 3 + (ev->correlation != 0) + (ev->stack != 0));
}

static uint64_t device_activity(struct mh__trace_estimate *e, const struct mh_event *ev)
{
    size_t name = ev->kind == MH_EV_KERNEL ? 6 + name_len(e, ev->str, 6) : 10 + 11;
    uint64_t n = begin_len(e, 1 + name, sdigits(ev->device >= 0 ? ev->device : 0),
                           (int64_t)ev->stream, ev->time_ns) +
                 DEVICE_ARGS + digits(ev->dur_ns / 1000) + 4 + sdigits(ev->device) +
                 digits(ev->stream) + digits(ev->correlation);
    n += layout(e, 8, 3 + (ev->kind != MH_EV_KERNEL));
    return n + (ev->kind != MH_EV_KERNEL ? LEN(",\"bytes\":") + digits(ev->size) : 0);
}

static uint64_t api_call(struct mh__trace_estimate *e, const struct mh_event *ev)
{
    uint64_t n = begin_len(e, 1 + 12 + name_len(e, ev->str, 8), e->host_pid_digits,
                           ev->thread, ev->time_ns) +
                 API_ARGS + digits(ev->dur_ns / 1000) + 4 + digits(ev->aux) +
                 digits(ev->correlation);
    if (ev->size)
        n += LEN(",\"bytes\":") + digits(ev->size);
    if (ev->addr)
        n += LEN(",\"addr\":\"0x\"") + 12;
    return n + layout(e, 8, 2 + (ev->size != 0) + (ev->addr != 0));
}

uint64_t mh__trace_estimate_event(struct mh__trace_estimate *e, const struct mh_event *ev)
{
    if (!e->have_base) {
        e->base_ns = ev->time_ns;
        e->have_base = 1;
    }
    switch (ev->kind) {
    case MH_EV_ALLOC: case MH_EV_FREE_REQUESTED: case MH_EV_FREE_COMPLETED:
        return counter(e, ev->device, ev->time_ns);
    case MH_EV_SEGMENT_ALLOC: case MH_EV_SEGMENT_FREE: case MH_EV_SEGMENT_MAP:
    case MH_EV_SEGMENT_UNMAP: case MH_EV_DRIVER_ALLOC: case MH_EV_DRIVER_FREE:
        return memory_instant(e, ev) + counter(e, ev->device, ev->time_ns);
    case MH_EV_OOM:
        return OOM_TOTAL + layout(e, 8, 10) + counter(e, ev->device, ev->time_ns);
    case MH_EV_KERNEL: case MH_EV_MEMCPY: case MH_EV_MEMSET:
        return device_activity(e, ev);
    case MH_EV_API_CALL:
        return api_call(e, ev);
    case MH_EV_RANGE_END: /* the range's complete slice */
        return begin_len(e, 1 + 6 + name_len(e, ev->str, 5), e->host_pid_digits, ev->thread,
                         ev->time_ns) + SLICE_TAIL + 8 + layout(e, 7, 0);
    case MH_EV_STEP_END:
        return begin_len(e, 1 + 4 + 5 + sdigits((int64_t)ev->aux), e->host_pid_digits, 0,
                         ev->time_ns) + SLICE_TAIL + 8 + layout(e, 7, 0);
    case MH_EV_MARK: case MH_EV_PHASE:
        return begin_len(e, 1 + 5 + (ev->kind == MH_EV_PHASE ? 9 : name_len(e, ev->str, 4)),
                         e->host_pid_digits, 0, ev->time_ns) + INSTANT_EXTRA + MARK_TAIL +
               layout(e, 7, 0);
    default:
        return 0;
    }
}

uint64_t mh__trace_estimate_flows(const struct mh__trace_estimate *e, uint64_t flows)
{
    /* {"ph":"s","cat":"ac2g","name":"ac2g","pid":P,"tid":T,"ts":X,"id":C} and
     * its "f" with "bp":"e", at typical lengths of their numbers */
    return flows * (200 + layout(e, 7, 0) + layout(e, 8, 0));
}

uint64_t mh__trace_estimate_end(struct mh__trace_estimate *e)
{
    uint64_t n = 0;
    for (int d = 0; d < MH__TRACE_MAX_DEVICES; d++)
        n += counter_taken(e, d);
    return n;
}
