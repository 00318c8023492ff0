/* cli_output.c - the commands' side of safe output files: opens and finishes
 * a viz/common/outfile.h output and prints why it failed, naming the file.
 * Every command that writes a file (trace, snapshot, plot, import, simulate)
 * goes through here. While an output is open, SIGINT, SIGTERM and SIGHUP
 * remove its temporary file before the tool dies of the signal, so an
 * interrupted run leaves nothing behind (SIGKILL cannot be caught: it leaves
 * the hidden temporary file, never a damaged output). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSIG_CLEANUP (sizeof cleanup_signals / sizeof cleanup_signals[0])
static struct sigaction saved[NSIG_CLEANUP];
static char tmp_path[4096];              /* the open output's temporary file */
static volatile sig_atomic_t pending_tmp; /* tmp_path holds it */

static void on_signal(int sig)
{
    if (pending_tmp)
        unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard(const struct mh__outfile *o)
{
    if (!o->tmp || strlen(o->tmp) >= sizeof tmp_path)
        return;
    memcpy(tmp_path, o->tmp, strlen(o->tmp) + 1);
    pending_tmp = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    for (size_t i = 0; i < NSIG_CLEANUP; i++)
        sigaction(cleanup_signals[i], &sa, &saved[i]);
}

static void unguard(void)
{
    if (!pending_tmp)
        return;
    for (size_t i = 0; i < NSIG_CLEANUP; i++)
        sigaction(cleanup_signals[i], &saved[i], NULL);
    pending_tmp = 0;
}

int mh__cli_output_open(struct mh__outfile *o, const char *path, const char *const *inputs,
                        size_t ninputs)
{
    int rc = mh__outfile_open(o, path, inputs, ninputs);
    if (rc < 0)
        mh__cli_error("%s: %s", path, o->msg);
    else
        guard(o);
    return rc;
}

int mh__cli_output_close(struct mh__outfile *o, const char *path, int rc, int errnum)
{
    if (rc < 0) {
        mh__outfile_abort(o);
        unguard();
        if (errnum)
            mh__cli_error("%s: cannot write: %s", path, strerror(errnum));
        return rc;
    }
    rc = mh__outfile_commit(o);
    unguard();
    if (rc < 0)
        mh__cli_error("%s: %s", path, o->msg);
    return rc;
}
