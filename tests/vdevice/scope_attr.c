/* scope_attr.c - prints the module every allocation of a recording is
 * attributed to, one line per allocation in file order:
 *
 *     STEP PHASE SIZE MODULE
 *
 * (MODULE: the innermost module scope open on the allocating thread as the
 * replay model sees it, "-" for none), and at each step's end, for every
 * thread that allocated and still has a module scope open,
 *
 *     open STEP - MODULE
 *
 * (none is expected: a forward that raised must not leave its scope open).
 * A test helper of
 * tests/vdevice/check_scopes.py, which compares two recordings of the same
 * program made with different module scope hooks.
 *
 *     scope_attr FILE.memhist
 *
 * Exits 1 with a one-line error when the file cannot be read. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "memhist/model.h"
#include "memhist/reader.h"

#define MAX_THREADS 64

static size_t note_thread(uint32_t *threads, size_t n, uint32_t thread)
{
    for (size_t i = 0; i < n; i++)
        if (threads[i] == thread)
            return n;
    if (n < MAX_THREADS)
        threads[n++] = thread;
    return n;
}

/* The threads with a module scope open at a step's end. */
static void print_open(struct mh_reader *r, struct mh_model *m, const uint32_t *threads, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t scope = mh_model_scope(m, threads[i]);
        const char *name = scope ? mh_reader_string(r, scope) : NULL;
        if (name && name[0])
            printf("open %" PRId64 " - %s\n", mh_model_current_step(m), name);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: scope_attr FILE.memhist\n");
        return 2;
    }
    struct mh_reader *r = NULL;
    char err[256] = "";
    if (mh_reader_open_detail(argv[1], &r, err, sizeof err) < 0) {
        fprintf(stderr, "scope_attr: %s: %s\n", argv[1], err);
        return 1;
    }
    struct mh_model_opts opts;
    memset(&opts, 0, sizeof opts);
    struct mh_model *m = NULL;
    if (mh_model_new(&opts, &m) < 0) {
        fprintf(stderr, "scope_attr: out of memory\n");
        mh_reader_close(r);
        return 1;
    }
    struct mh_event ev;
    int rc;
    uint32_t threads[MAX_THREADS];
    size_t nthreads = 0;
    while ((rc = mh_reader_next(r, &ev)) > 0) {
        if (ev.kind == MH_EV_STEP_END)
            print_open(r, m, threads, nthreads);
        if (ev.kind == MH_EV_ALLOC)
            nthreads = note_thread(threads, nthreads, ev.thread);
        if (ev.kind == MH_EV_ALLOC) {
            uint32_t scope = mh_model_scope(m, ev.thread);
            const char *name = scope ? mh_reader_string(r, scope) : NULL;
            printf("%" PRId64 " %d %" PRIu64 " %s\n", mh_model_current_step(m),
                   mh_model_current_phase(m), (uint64_t)ev.size, name && name[0] ? name : "-");
        }
        mh_model_apply(m, &ev, NULL);
    }
    if (rc < 0)
        fprintf(stderr, "scope_attr: %s: %s\n", argv[1], mh_reader_errmsg(r));
    mh_model_free(m);
    mh_reader_close(r);
    return rc < 0 ? 1 : 0;
}
