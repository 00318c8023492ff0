/* fuzz_import_pickle.c - libFuzzer target for the strict pickle reader and the
 * snapshot import behind it (`memhist import`).
 *
 * Every input must end in a return code, never a crash, hang or leak: the
 * reader must refuse what it cannot read, and whatever it accepts is walked
 * (bounded by the reader's nesting limit) and then imported as a snapshot
 * into an in-memory writer, streamed and read whole: when both succeed they
 * must agree on what they imported. Seeds: tests/fuzz/corpus/pickle (run e.g.
 * ./fuzz_import_pickle -max_total_time=60 <copy of that folder>). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memhist/memhist.h"
#include "pickle_read.h"
#include "pickle_value.h"
#include "snapshot_import.h"

/* Touches every node, as a consumer would (depth is bounded by the reader). */
static uint64_t walk(const struct mh__pv *v, int depth)
{
    if (!v || depth > 260)
        return 0;
    uint64_t sum = v->type;
    if (v->type == MH__PV_STR || v->type == MH__PV_BYTES || v->type == MH__PV_BIGINT)
        for (uint32_t i = 0; i < v->n && i < 64; i++)
            sum += (unsigned char)v->u.s[i];
    size_t n = mh__pv_len(v);
    for (size_t i = 0; i < n && i < 4096; i++)
        sum += walk(v->u.items[i], depth + 1);
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mh__pickle_limits lim = {64ull << 20, 0};
    struct mh__pickle_doc *doc = NULL;
    char err[256];
    if (mh__pickle_parse(data, size, &lim, &doc, err, sizeof err) == 0) {
        volatile uint64_t sink = walk(mh__pickle_doc_root(doc), 0);
        (void)sink;
        mh__pickle_doc_free(doc);
        struct mh__import_info info[2];
        int rc[2];
        for (int whole = 0; whole < 2; whole++) {
            struct mh_writer_opts o = {"imported", 0};
            struct mh__import_opts io = {&lim, 0, whole, NULL, NULL};
            struct mh_writer *w;
            rc[whole] = -1;
            if (mh_writer_open_mem(&o, &w) == 0) {
                rc[whole] = mh__snapshot_import_with(data, size, &io, w, &info[whole], err,
                                                     sizeof err);
                mh_writer_close(w);
                mh_writer_free_mem(w);
            }
        }
        if (rc[0] == 0 && rc[1] == 0 &&
            (info[0].entries != info[1].entries || info[0].segments != info[1].segments ||
             info[0].blocks != info[1].blocks || info[0].annotations != info[1].annotations ||
             info[0].preexisting_blocks != info[1].preexisting_blocks ||
             info[0].inconsistencies != info[1].inconsistencies))
            __builtin_trap();
    }
    return 0;
}
