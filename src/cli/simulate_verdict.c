/* simulate_verdict.c - the answer `memhist simulate -- COMMAND` ends with:
 * for each recorded file and device, whether the program's memory fit the
 * virtual GPU (peak reserved against what the CUDA context leaves) or where
 * it ran out. Reads the recordings through a replay session (session.h), as
 * every other command does, so the figures are the report's. */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "replay_file.h"
#include "simulate.h"

static void device_verdict(const char *path, const char *prefix, const struct mh__replay *rp,
                           int dev, uint64_t context)
{
    struct mh_device_info info;
    struct mh_peak peak;
    char b1[32], b2[32], b3[32], b4[32];
    mh__device_info(rp->reader, dev, &info);
    mh_model_peak_reserved(rp->model, dev, &peak);
    for (size_t i = 0; i < mh_model_oom_count(rp->model); i++) {
        struct mh_oom_info oom;
        if (mh_model_oom(rp->model, i, &oom) == 0 && oom.device == dev) {
            printf("does not fit: %s%s (device %d) ran out of memory in step %" PRId64
                   " asking for %s with %s reserved; next: memhist oom %s\n",
                   prefix, info.name, dev, oom.step, mh__bytes_text(oom.request, b1),
                   mh__bytes_text(oom.reserved, b2), path);
            return;
        }
    }
    uint64_t usable = info.total_bytes > context ? info.total_bytes - context : 0;
    printf("fits: %s%s (device %d): peak reserved %s of %s usable (the CUDA context takes %s), "
           "%s to spare\n",
           prefix, info.name, dev, mh__bytes_text(peak.value, b1), mh__bytes_text(usable, b2),
           mh__bytes_text(context, b3),
           mh__bytes_text(usable > peak.value ? usable - peak.value : 0, b4));
}

int mh__cli_simulate_verdict(const char *path, int name_file, uint64_t context)
{
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s%s", name_file ? path : "", name_file ? ": " : "");
    struct mh__session *s;
    if (mh__session_open(path, &s) < 0)
        return MH__EXIT_FAIL;
    if (mh__session_run(s, 0) < 0) {
        mh__session_close(s);
        return MH__EXIT_FAIL;
    }
    const struct mh__replay rp = {.path = path, .reader = mh__session_reader(s), .model = mh__session_model(s)};
    for (size_t i = 0; i < mh_model_device_count(rp.model); i++)
        device_verdict(path, prefix, &rp, mh_model_device_at(rp.model, i), context);
    mh__session_close(s);
    return MH__EXIT_OK;
}
