/* export_file.c - mh_arrow_open and the open file (see memhist/arrow.h,
 * export_int.h): the first pass as an analysis, the file's run id and rank,
 * its warnings, and the routing of diag.h messages to whichever file or
 * stream the thread works for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diag.h"
#include "export_int.h"
#include "grow.h"
#include "job_ranks.h"

static _Thread_local const struct mh__msg_route *route;
static pthread_once_t route_once = PTHREAD_ONCE_INIT;

static void add_warning(struct mh_arrow_file *f, const char *msg)
{
    pthread_mutex_lock(&f->lock);
    int seen = 0;
    for (size_t i = 0; i < f->nwarnings && !seen; i++)
        seen = strcmp(f->warnings[i], msg) == 0;
    if (!seen && MH__GROW(f->warnings, f->nwarnings, f->capwarnings, 4) == 0 &&
        (f->warnings[f->nwarnings] = strdup(msg)))
        f->nwarnings++;
    pthread_mutex_unlock(&f->lock);
}

static void on_message(void *user, const char *msg)
{
    (void)user;
    const struct mh__msg_route *r = route;
    if (!r)
        return;
    if (strncmp(msg, "warning: ", 9) == 0 && r->file)
        add_warning(r->file, msg + 9);
    else if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s", msg);
}

static void install(void)
{
    mh__diag_set(on_message, NULL);
    mh__progress_set_default(NULL); /* sessions report nothing */
}

void mh__msg_route(const struct mh__msg_route *r)
{
    pthread_once(&route_once, install);
    route = r;
}

int mh_arrow_schema_version(void)
{
    return MH_ARROW_SCHEMA_VERSION;
}

const char *mh_arrow_table_name(size_t i)
{
    return i < MH__T_COUNT ? mh__tables[i].name : NULL;
}

int mh_arrow_schema(const char *table, struct ArrowSchema *out)
{
    int t = mh__table_find(table);
    return t < 0 ? MH_ENOTFOUND : mh__table_schema(&mh__tables[t], out);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* The run id: the UTC start time and a hash of the metadata and the
 * extent of the events, the same for the same file wherever it lies. */
static void make_run_id(struct mh_arrow_file *f)
{
    const struct mh_reader *r = f->a.rp.reader;
    const struct mh_file_summary *s = &f->a.rp.summary;
    uint64_t h = 14695981039346656037ull;
    const char *k, *v;
    for (size_t i = 0; mh_reader_meta_at(r, i, &k, &v); i++) {
        h = fnv(h, k, strlen(k) + 1);
        h = fnv(h, v, strlen(v) + 1);
    }
    uint64_t extent[3] = {s->events, s->first_time_ns, s->last_time_ns};
    h = fnv(h, extent, sizeof extent);
    const char *start = mh_reader_meta(r, "start_ns");
    uint64_t ns = start ? strtoull(start, NULL, 10) : 0;
    time_t secs = (time_t)((ns ? ns : s->first_time_ns) / 1000000000ull);
    struct tm tm;
    char when[24] = "00000000T000000Z";
    if (secs > 0 && gmtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(f->run, sizeof f->run, "%s-%016llx", when, (unsigned long long)h);
    f->run_names[0] = f->run;
}

static void file_free(struct mh_arrow_file *f)
{
    mh__analysis_close(&f->a);
    for (size_t i = 0; i < f->nwarnings; i++)
        free(f->warnings[i]);
    free(f->warnings);
    pthread_mutex_destroy(&f->lock);
    free(f->path);
    free(f);
}

void mh__file_ref(struct mh_arrow_file *f)
{
    atomic_fetch_add(&f->refs, 1);
}

void mh__file_unref(struct mh_arrow_file *f)
{
    if (f && atomic_fetch_sub(&f->refs, 1) == 1)
        file_free(f);
}

static int open_analysis(struct mh_arrow_file *f, char *err, size_t errlen)
{
    if (strcmp(f->path, "-") == 0) {
        snprintf(err, errlen,
                 "standard input cannot be exported: the tables need a file "
                 "they can read more than once");
        return MH_EUNSUPPORTED;
    }
    int rc = mh__analysis_open(f->path, NULL, &f->a);
    if (rc < 0 && err && errlen && !*err)
        snprintf(err, errlen, "%s: %s", f->path, mh_strerror(rc));
    return rc;
}

int mh_arrow_open(const char *path, const struct mh_arrow_opts *opts, struct mh_arrow_file **out,
                  char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        *err = '\0';
    struct mh_arrow_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return MH_ENOMEM;
    }
    pthread_mutex_init(&f->lock, NULL);
    atomic_init(&f->refs, 1);
    f->batch_rows = opts && opts->batch_rows ? opts->batch_rows : 65536;
    struct mh__msg_route r = {f, err, errlen};
    mh__msg_route(&r);
    int rc = open_analysis(f, err, errlen);
    mh__msg_route(NULL);
    if (rc < 0) {
        file_free(f);
        return rc;
    }
    struct mh__rank_row row;
    mh__rank_row_fill(&f->a, &row);
    f->rank = row.rank;
    make_run_id(f);
    *out = f;
    return 0;
}

void mh_arrow_close(struct mh_arrow_file *f)
{
    mh__file_unref(f);
}

const char *mh_arrow_warning(const struct mh_arrow_file *f, size_t i)
{
    struct mh_arrow_file *w = (struct mh_arrow_file *)f;
    pthread_mutex_lock(&w->lock);
    const char *s = i < f->nwarnings ? f->warnings[i] : NULL;
    pthread_mutex_unlock(&w->lock);
    return s;
}

void mh_arrow_info(const struct mh_arrow_file *f, struct mh_arrow_info *out)
{
    out->run = f->run;
    out->rank = f->rank;
    out->events = f->a.rp.summary.events;
    out->damaged = f->a.rp.read_error != 0;
}

void mh_arrow_progress(const struct mh_arrow_file *f, uint64_t *done, uint64_t *total)
{
    *done = atomic_load(&((struct mh_arrow_file *)f)->progress);
    *total = f->a.rp.summary.events;
}
