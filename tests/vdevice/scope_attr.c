/* scope_attr.c - prints the module every allocation of a recording is
 * attributed to, one line per allocation in file order:
 *
 *     STEP PHASE SIZE MODULE
 *
 * (MODULE: the innermost module scope open on the allocating thread as the
 * replay model sees it, "-" for none). A test helper of
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
    while ((rc = mh_reader_next(r, &ev)) > 0) {
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
