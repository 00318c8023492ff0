/* cli_output.c - the commands' side of safe output files: opens and finishes
 * a viz/common/outfile.h output and prints why it failed, naming the file. Every
 * command that writes a file (trace, snapshot, plot, import, simulate) goes
 * through here. */
#include <string.h>

#include "cli.h"

int mh__cli_output_open(struct mh_outfile *o, const char *path, const char *const *inputs,
                       size_t ninputs)
{
    int rc = mh__outfile_open(o, path, inputs, ninputs);
    if (rc < 0)
        mh__cli_error("%s: %s", path, o->msg);
    return rc;
}

int mh__cli_output_close(struct mh_outfile *o, const char *path, int rc, int errnum)
{
    if (rc < 0) {
        mh__outfile_abort(o);
        if (errnum)
            mh__cli_error("%s: cannot write: %s", path, strerror(errnum));
        return rc;
    }
    rc = mh__outfile_commit(o);
    if (rc < 0)
        mh__cli_error("%s: %s", path, o->msg);
    return rc;
}
