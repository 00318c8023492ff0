/* fuzz_record_cupti_walk.c - libFuzzer target for the CUPTI activity-buffer
 * walker (src/record/cupti_walk.c): any bytes must walk without reading
 * outside the buffer, and the walk must account for what it consumed. Name
 * pointers inside records are never followed (the callback ignores them, as
 * the walker itself does). Seeds: tests/fuzz/corpus/cupti/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "cupti_walk.h"

static int check_item(void *user, const struct mh__cupti_item *it)
{
    size_t *n = user;
    (*n)++;
    if (it->ev.kind >= MH_EV_KIND_COUNT)
        abort();
    if (it->name_static && !it->name)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* copy to an exact-size heap block so ASan catches any overread */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    size_t n = 0;
    struct mh__cupti_walk_stats st;
    int rc = mh__cupti_walk(buf, size, check_item, &n, &st);
    if (st.consumed > size || st.events != n || st.events > st.records)
        abort();
    if (rc != 0 && rc != MH_EFORMAT && rc != MH_ETRUNCATED)
        abort();
    if (rc == 0 && st.consumed != size)
        abort();
    free(buf);
    return 0;
}
