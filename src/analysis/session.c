/* session.c - the replay session (see session.h): one reader, one model per
 * pass, and the observer table called for every event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diag.h"
#include "session.h"

#define MAX_OBSERVERS 16
/* Events between two progress reports: rare enough to cost nothing, often
 * enough for a few reports a second. */
#define PROGRESS_EVERY 16384

struct mh__session {
    const char *path;
    const void *mem; /* the input of mh__session_open_mem, else NULL */
    size_t mem_len;
    struct mh_reader *reader;
    struct mh_model *model;
    struct mh_alloc_conf conf;
    struct mh__observer obs[MAX_OBSERVERS];
    size_t nobs;
    int conf_read;
    uint64_t index;
    int read_error, warned;
    unsigned passes;
    struct mh__progress progress;
    char what[320]; /* the name of the current pass for progress reports */
    int (*stop_before)(void *user, struct mh__session *s, const struct mh_event *ev);
    void *stop_user;
};

/* The settings are metadata that precede the first event in the file. */
static void read_conf(struct mh__session *s)
{
    if (s->conf_read++)
        return;
    memset(&s->conf, 0, sizeof s->conf);
    const char *text = mh_reader_meta(s->reader, "alloc_conf");
    char err[128];
    if (text && mh_alloc_conf_parse(text, &s->conf, err, sizeof err) != 0) {
        mh__diag("warning: ignoring the recorded allocator settings '%s': %s", text, err);
        memset(&s->conf, 0, sizeof s->conf);
    }
}

int mh__session_open(const char *path, struct mh__session **out)
{
    *out = NULL;
    struct mh__session *s = calloc(1, sizeof *s);
    if (!s) {
        mh__diag("%s: %s", path, mh_strerror(MH_ENOMEM));
        return MH_ENOMEM;
    }
    s->path = path;
    s->progress = mh__progress_default();
    char detail[256];
    int rc = mh_reader_open_detail(path, &s->reader, detail, sizeof detail);
    if (rc < 0) {
        mh__diag("%s: %s", path, detail);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int mh__session_open_mem(const void *data, size_t len, const char *name, struct mh__session **out)
{
    *out = NULL;
    struct mh__session *s = calloc(1, sizeof *s);
    if (!s)
        return MH_ENOMEM;
    s->path = name;
    s->mem = data ? data : "";
    s->mem_len = len;
    s->progress = mh__progress_default();
    int rc = mh_reader_open_mem(data, len, &s->reader);
    if (rc < 0) {
        mh__diag("%s: %s", name, mh_strerror(rc));
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void mh__session_close(struct mh__session *s)
{
    if (!s)
        return;
    mh_model_free(s->model);
    mh_reader_close(s->reader);
    free(s);
}

int mh__session_observe(struct mh__session *s, const struct mh__observer *o)
{
    if (s->nobs == MAX_OBSERVERS)
        return MH_ELIMIT;
    s->obs[s->nobs++] = *o;
    return 0;
}

void mh__session_forget(struct mh__session *s)
{
    s->nobs = 0;
}

void mh__session_set_progress(struct mh__session *s, const struct mh__progress *p)
{
    s->progress = p ? *p : (struct mh__progress){NULL, NULL};
}

/* Reports how far the reader has got; `end` ends the pass's piece of work. */
static void report_progress(struct mh__session *s, int end)
{
    uint64_t done, total;
    if (!s->progress.fn)
        return;
    mh_reader_position(s->reader, &done, &total);
    if (end || (total && done > total))
        total = done = total > done ? total : done;
    mh__progress_report(&s->progress, s->what, done, total);
}

static void name_pass(struct mh__session *s)
{
    const char *name = strcmp(s->path, "-") == 0 ? "standard input" : s->path;
    if (s->passes <= 1)
        snprintf(s->what, sizeof s->what, "reading %s", name);
    else
        snprintf(s->what, sizeof s->what, "reading %s (pass %u)", name, s->passes);
}

/* Reads the first event into *ev (rc 1), or finds none (0), or fails (< 0).
 * The settings are metadata that precede the first event in the file, so
 * they are read once it has been. */
static int start_pass(struct mh__session *s, struct mh_event *ev)
{
    int rc = s->passes++ ? mh_reader_rewind(s->reader) : 0;
    if (rc < 0)
        return rc;
    name_pass(s);
    rc = mh_reader_next(s->reader, ev);
    read_conf(s);
    return rc;
}

static int new_model(const struct mh__session *s, struct mh_model **out)
{
    struct mh_model_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.conf = s->conf;
    return mh_model_new(&opts, out);
}

static int notify_event(struct mh__session *s, const struct mh_event *ev,
                        const struct mh_apply_result *res)
{
    for (size_t i = 0; i < s->nobs; i++) {
        int rc = s->obs[i].event ? s->obs[i].event(s->obs[i].user, s, ev, res) : 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Replays into `m`, calling the observers if `observe`; returns 0 at the
 * end or stop point, 1 if an observer ended the pass, < 0 on an error. */
static int replay_events(struct mh__session *s, struct mh_model **m, uint64_t stop_after, int observe)
{
    struct mh_event ev;
    struct mh_apply_result res;
    int rc = start_pass(s, &ev);
    if (rc == MH_EUNSUPPORTED)
        return rc;
    int mrc = new_model(s, m);
    if (mrc < 0)
        return mrc;
    for (size_t i = 0; observe && i < s->nobs && mrc == 0; i++)
        mrc = s->obs[i].begin ? s->obs[i].begin(s->obs[i].user, s) : 0;
    if (mrc < 0)
        return mrc;
    for (s->index = 0; rc == 1 && (stop_after == 0 || s->index < stop_after); s->index++) {
        if (observe && s->stop_before && s->stop_before(s->stop_user, s, &ev)) {
            rc = 0; /* a stop point before this event */
            break;
        }
        memset(&res, 0, sizeof res);
        if ((rc = mh_model_apply(*m, &ev, &res)) < 0)
            return rc;
        if (observe && (rc = notify_event(s, &ev, &res)) != 0)
            return rc;
        if ((s->index + 1) % PROGRESS_EVERY == 0)
            report_progress(s, 0);
        rc = mh_reader_next(s->reader, &ev);
    }
    s->read_error = rc < 0 ? rc : 0;
    if (rc < 0 && rc != MH_ENOMEM) {
        if (!s->warned++)
            mh__diag("warning: %s: %s; using the events before that point", s->path,
                     mh_reader_errmsg(s->reader));
        rc = 0;
    }
    return rc < 0 ? rc : 0;
}

/* replay_events, then the end of the pass's progress. */
static int replay(struct mh__session *s, struct mh_model **m, uint64_t stop_after, int observe)
{
    int rc = replay_events(s, m, stop_after, observe);
    report_progress(s, 1);
    return rc;
}

static int fail(const struct mh__session *s, int rc)
{
    mh__diag("%s: %s%s", s->path, mh_strerror(rc),
             rc == MH_EUNSUPPORTED ? " (this needs a file it can read twice, not a pipe)" : "");
    return rc;
}

void mh__session_stop_before(struct mh__session *s,
                             int (*fn)(void *user, struct mh__session *s, const struct mh_event *ev),
                             void *user)
{
    s->stop_before = fn;
    s->stop_user = user;
}

int mh__session_run(struct mh__session *s, uint64_t stop_after)
{
    mh_model_free(s->model);
    s->model = NULL;
    int rc = replay(s, &s->model, stop_after, 1);
    s->stop_before = NULL;
    if (rc < 0)
        return fail(s, rc);
    mh_model_finish(s->model);
    for (size_t i = 0; i < s->nobs && rc >= 0; i++)
        rc = s->obs[i].end ? s->obs[i].end(s->obs[i].user, s) : 0;
    return rc < 0 ? rc : 0;
}

int mh__session_pass(struct mh__session *s, const struct mh__observer *o)
{
    int rc = mh__session_observe(s, o);
    if (rc < 0)
        return fail(s, rc);
    rc = mh__session_run(s, 0);
    s->nobs--;
    return rc;
}

int mh__session_state_at(struct mh__session *s, uint64_t n, struct mh_model **out)
{
    *out = NULL;
    int rc = replay(s, out, n, 0);
    if (rc == 0)
        mh_model_finish(*out);
    if (rc < 0) {
        mh_model_free(*out);
        *out = NULL;
        return fail(s, rc);
    }
    return 0;
}

int mh__session_rereadable(const struct mh__session *s)
{
    struct stat st;
    if (s->mem)
        return 1;
    return strcmp(s->path, "-") != 0 && stat(s->path, &st) == 0 && S_ISREG(st.st_mode);
}

int mh__session_reader_again(const struct mh__session *s, struct mh_reader **out)
{
    *out = NULL;
    if (s->mem)
        return mh_reader_open_mem(s->mem, s->mem_len, out);
    if (!mh__session_rereadable(s))
        return MH_EUNSUPPORTED;
    return mh_reader_open(s->path, out);
}

const char *mh__session_path(const struct mh__session *s)
{
    return s->path;
}
const struct mh_reader *mh__session_reader(const struct mh__session *s)
{
    return s->reader;
}
struct mh_model *mh__session_model(const struct mh__session *s)
{
    return s->model;
}

struct mh_model *mh__session_take_model(struct mh__session *s)
{
    struct mh_model *m = s->model;
    s->model = NULL;
    return m;
}
const struct mh_alloc_conf *mh__session_conf(struct mh__session *s)
{
    read_conf(s);
    return &s->conf;
}

int mh__session_skim(struct mh__session *s)
{
    struct mh_event ev;
    int rc = s->passes++ ? mh_reader_rewind(s->reader) : 0;
    name_pass(s);
    for (uint64_t i = 1; rc == 0 && (rc = mh_reader_next(s->reader, &ev)) == 1; i++) {
        rc = 0;
        if (i % PROGRESS_EVERY == 0)
            report_progress(s, 0);
    }
    report_progress(s, 1);
    return rc;
}
uint64_t mh__session_index(const struct mh__session *s)
{
    return s->index;
}
int mh__session_read_error(const struct mh__session *s)
{
    return s->read_error;
}
unsigned mh__session_passes(const struct mh__session *s)
{
    return s->passes;
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
