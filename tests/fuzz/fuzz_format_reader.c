/* fuzz_format_reader.c - libFuzzer target for the .memhist reader: opens the
 * input from memory and walks everything it yields (events, the definitions
 * they name, metadata, devices, the summary), then rewinds and reads again. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memhist/reader.h"

static volatile uint64_t sink;

static void touch_string(const char *s)
{
    if (s)
        sink += strlen(s);
}

static void walk_event(struct mh_reader *r, const struct mh_event *ev)
{
    const uint32_t *frames;
    size_t n;
    struct mh_frame f;
    touch_string(mh_reader_string(r, ev->str));
    touch_string(mh_reader_string(r, ev->str2));
    if (mh_reader_stack(r, ev->stack, &frames, &n) == 0)
        for (size_t i = 0; i < n; i++)
            if (mh_reader_frame(r, frames[i], &f) == 0) {
                touch_string(f.file);
                touch_string(f.func);
            }
    sink += ev->addr ^ ev->size ^ ev->time_ns;
}

static void walk(struct mh_reader *r)
{
    struct mh_event ev;
    while (mh_reader_next(r, &ev) == 1)
        walk_event(r, &ev);
    touch_string(mh_reader_errmsg(r));
    const char *k, *v;
    for (size_t i = 0; mh_reader_meta_at(r, i, &k, &v); i++) {
        touch_string(k);
        touch_string(v);
    }
    touch_string(mh_reader_meta(r, "source"));
    for (size_t i = 0; i < mh_reader_device_count(r); i++) {
        struct mh_device_info d;
        if (mh_reader_device(r, i, &d) == 0)
            touch_string(d.name);
    }
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    sink += s.events + s.dropped;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mh_reader *r;
    if (mh_reader_open_mem(data, size, &r) != 0)
        return 0;
    walk(r);
    if (mh_reader_rewind(r) == 0)
        walk(r);
    mh_reader_close(r);
    return 0;
}
