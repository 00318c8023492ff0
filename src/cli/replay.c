/* replay.c - opening a .memhist file and replaying it through the model, the
 * first step of most subcommands (see cli.h). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/stacks.h"

int mh_cli_open_reader(const char *path, struct mh_reader **out)
{
    char detail[256];
    int rc = mh_reader_open_detail(path, out, detail, sizeof detail);
    if (rc < 0)
        mh_cli_error("%s: %s", path, detail);
    return rc;
}

void mh_cli_device_info(const struct mh_reader *r, int device, struct mh_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->device = device;
    out->name = "";
    for (size_t i = 0; i < mh_reader_device_count(r); i++) {
        struct mh_device_info d;
        if (mh_reader_device(r, i, &d) == 0 && d.device == device)
            *out = d;
    }
}

void mh_cli_file_conf(const struct mh_reader *r, struct mh_alloc_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    const char *text = mh_reader_meta(r, "alloc_conf");
    char err[128];
    if (text && mh_alloc_conf_parse(text, conf, err, sizeof err) != 0) {
        mh_cli_error("warning: ignoring the recorded allocator settings '%s': %s", text, err);
        memset(conf, 0, sizeof *conf);
    }
}

int mh_replay_open(const char *path, uint64_t stop_after, struct mh_replay *out)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    int rc = mh_cli_open_reader(path, &out->reader);
    if (rc < 0)
        return rc;
    /* the settings are metadata that precede the first event in the file */
    struct mh_event ev;
    int first = mh_reader_next(out->reader, &ev);
    struct mh_model_opts opts;
    memset(&opts, 0, sizeof opts);
    mh_cli_file_conf(out->reader, &opts.conf);
    rc = mh_model_new(&opts, &out->model);
    if (rc < 0) {
        mh_cli_error("%s: %s", path, mh_strerror(rc));
        mh_replay_close(out);
        return rc;
    }
    uint64_t n = 0;
    rc = first;
    while (rc == 1 && (stop_after == 0 || n < stop_after)) {
        if ((rc = mh_model_apply(out->model, &ev, NULL)) < 0)
            break;
        n++;
        rc = mh_reader_next(out->reader, &ev);
    }
    if (rc < 0 && rc != MH_ENOMEM) {
        out->read_error = rc;
        mh_cli_error("warning: %s: %s; using the events before that point", path,
                     mh_reader_errmsg(out->reader));
        rc = 0;
    } else if (rc < 0) {
        mh_cli_error("%s: %s", path, mh_strerror(rc));
        mh_replay_close(out);
        return rc;
    }
    mh_model_finish(out->model);
    mh_reader_summary(out->reader, &out->summary);
    return 0;
}

void mh_replay_close(struct mh_replay *rp)
{
    mh_model_free(rp->model);
    mh_reader_close(rp->reader);
    rp->model = NULL;
    rp->reader = NULL;
}

/* Whether the stack has a frame of user code (not framework internals). */
static int has_user_frame(const struct mh_reader *r, const uint32_t *frames, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        if (mh_reader_frame(r, frames[i], &f) == 0 && !mh_frame_is_internal(f.file, f.func))
            return 1;
    }
    return 0;
}

const char *mh_cli_stack_text(const struct mh_reader *r, uint32_t stack, const char *sep,
                              size_t max_frames, char *buf, size_t len)
{
    const uint32_t *frames;
    size_t n, used = 0, shown = 0, hidden = 0;
    buf[0] = '\0';
    if (stack == 0 || mh_reader_stack(r, stack, &frames, &n) != 0)
        return buf;
    int skip_internal = has_user_frame(r, frames, n);
    /* framework frames only: from the innermost operation (mh_stack_best_index) */
    int best = skip_internal ? 0 : mh_stack_best_index(r, stack);
    hidden = best > 0 ? (size_t)best : 0;
    for (size_t i = hidden; i < n && used + 1 < len; i++) {
        struct mh_frame f;
        int internal = mh_reader_frame(r, frames[i], &f) != 0 || mh_frame_is_internal(f.file, f.func);
        if ((skip_internal && internal) || shown >= max_frames) {
            hidden++;
            continue;
        }
        char frame[512];
        mh_frame_text(r, frames[i], frame, sizeof frame);
        int w = snprintf(buf + used, len - used, "%s%s", shown ? sep : "", frame);
        if (w < 0)
            break;
        used += (size_t)w;
        shown++;
    }
    if (hidden && used + 1 < len)
        snprintf(buf + used, len - used, "%s(+%zu more frame%s)", sep, hidden,
                 hidden == 1 ? "" : "s");
    return buf;
}
