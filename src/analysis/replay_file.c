/* replay_file.c - opening a .memhist file and replaying it through the
 * model (see replay_file.h). */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "replay_file.h"

int mh__open_reader(const char *path, struct mh_reader **out)
{
    char detail[256];
    int rc = mh_reader_open_detail(path, out, detail, sizeof detail);
    if (rc < 0)
        mh__diag("%s: %s", path, detail);
    return rc;
}

void mh__device_info(const struct mh_reader *r, int device, struct mh_device_info *out)
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

void mh__file_conf(const struct mh_reader *r, struct mh_alloc_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    const char *text = mh_reader_meta(r, "alloc_conf");
    char err[128];
    if (text && mh_alloc_conf_parse(text, conf, err, sizeof err) != 0) {
        mh__diag("warning: ignoring the recorded allocator settings '%s': %s", text, err);
        memset(conf, 0, sizeof *conf);
    }
}

int mh__replay_open(const char *path, uint64_t stop_after, struct mh_replay *out)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    int rc = mh__open_reader(path, &out->reader);
    if (rc < 0)
        return rc;
    /* the settings are metadata that precede the first event in the file */
    struct mh_event ev;
    int first = mh_reader_next(out->reader, &ev);
    struct mh_model_opts opts;
    memset(&opts, 0, sizeof opts);
    mh__file_conf(out->reader, &opts.conf);
    rc = mh_model_new(&opts, &out->model);
    if (rc < 0) {
        mh__diag("%s: %s", path, mh_strerror(rc));
        mh__replay_close(out);
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
        mh__diag("warning: %s: %s; using the events before that point", path,
                     mh_reader_errmsg(out->reader));
        rc = 0;
    } else if (rc < 0) {
        mh__diag("%s: %s", path, mh_strerror(rc));
        mh__replay_close(out);
        return rc;
    }
    mh_model_finish(out->model);
    mh_reader_summary(out->reader, &out->summary);
    return 0;
}

void mh__replay_close(struct mh_replay *rp)
{
    mh_model_free(rp->model);
    mh_reader_close(rp->reader);
    rp->model = NULL;
    rp->reader = NULL;
}
