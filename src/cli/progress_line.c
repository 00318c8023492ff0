/* progress_line.c - the progress line of the `memhist` command (see cli.h).
 *
 * The libraries report how far long work has got through the callback of
 * src/model/progress.h; main.c installs this file's callback as the
 * default, so every replay session and importer reports here. A line such as
 *   memhist: reading run.memhist: 45%, 12 s left
 * is drawn on stderr, only when stderr is a terminal, not before the command
 * has run for a second, at most five times a second, redrawn in place with
 * '\r' and cleared when the work ends or before any other line goes to
 * stderr. Pieces of work running at once (several files read in parallel)
 * share one line with their sums. The state is guarded by stderr's own
 * lock (recursive), the one mh__cli_error holds for its line, so a message
 * and the progress line never interleave. --quiet and MEMHIST_QUIET=1 turn
 * it off. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

#define MAX_PIECES 64
#define FIRST_DRAW_NS 1000000000ull /* nothing for the first second */
#define REDRAW_NS 200000000ull      /* at most five lines a second */

/* A piece of work: its name and the thread reporting it (two files replayed
 * on two threads may both report a "what-if replay"). */
struct piece {
    char what[160];
    pthread_t thread;
    uint64_t done, total, start_ns;
    int used;
};

static struct piece pieces[MAX_PIECES];
static int enabled, shown;
static uint64_t start_ns, drawn_ns;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct piece *find_piece(const char *what, int add)
{
    struct piece *free_slot = NULL;
    for (size_t i = 0; i < MAX_PIECES; i++) {
        if (pieces[i].used && pthread_equal(pieces[i].thread, pthread_self()) &&
            strncmp(pieces[i].what, what, sizeof pieces[i].what - 1) == 0)
            return &pieces[i];
        if (!pieces[i].used && !free_slot)
            free_slot = &pieces[i];
    }
    if (!add || !free_slot)
        return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    snprintf(free_slot->what, sizeof free_slot->what, "%s", what);
    free_slot->used = 1;
    free_slot->thread = pthread_self();
    free_slot->start_ns = now_ns();
    return free_slot;
}

static void erase_line(void)
{
    if (shown)
        fputs("\r\033[K", stderr);
    shown = 0;
}

static size_t terminal_columns(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

/* "45%, 12 s left", or "1.21 GiB so far" when the total is unknown (a
 * file read from a pipe). */
static void format_amount(uint64_t done, uint64_t total, uint64_t first_ns, uint64_t now,
                          char *out, size_t len)
{
    char a[32];
    if (total == 0) {
        snprintf(out, len, "%s so far", mh__bytes_text(done, a));
        return;
    }
    int n = snprintf(out, len, "%d%%", (int)(100.0 * (double)done / (double)total));
    double spent = (double)(now - first_ns) / 1e9;
    if (done > 0 && spent >= 2.0 && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, ", %.0f s left",
                 spent * (double)(total - done) / (double)done + 0.5);
}

static void draw(uint64_t now)
{
    uint64_t done = 0, total = 0, first = now;
    size_t n = 0, last = 0, unknown = 0;
    for (size_t i = 0; i < MAX_PIECES; i++) {
        if (!pieces[i].used)
            continue;
        n++, last = i;
        done += pieces[i].done;
        total += pieces[i].total;
        unknown += pieces[i].total == 0;
        first = pieces[i].start_ns < first ? pieces[i].start_ns : first;
    }
    if (n == 0)
        return;
    char amount[96], line[512];
    format_amount(done, unknown ? 0 : total, first, now, amount, sizeof amount);
    if (n == 1)
        snprintf(line, sizeof line, "memhist: %s: %s", pieces[last].what, amount);
    else
        snprintf(line, sizeof line, "memhist: %s and %zu more: %s", pieces[last].what, n - 1,
                 amount);
    size_t cols = terminal_columns();
    if (strlen(line) >= cols)
        line[cols - 1] = '\0';
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    shown = 1;
    drawn_ns = now;
}

static void on_progress(void *user, const char *what, uint64_t done, uint64_t total)
{
    (void)user;
    flockfile(stderr);
    struct piece *p = find_piece(what, done != total);
    if (p && done == total) {
        p->used = 0;
        erase_line();
    } else if (p) {
        p->done = done;
        p->total = total;
        uint64_t now = now_ns();
        if (now - start_ns >= FIRST_DRAW_NS && (!shown || now - drawn_ns >= REDRAW_NS))
            draw(now);
    }
    funlockfile(stderr);
}

static int env_quiet(void)
{
    const char *q = getenv("MEMHIST_QUIET");
    return q && *q && strcmp(q, "0") != 0;
}

void mh__cli_progress_setup(void)
{
    start_ns = now_ns();
    enabled = isatty(STDERR_FILENO) && !env_quiet();
    const struct mh__progress p = {on_progress, NULL};
    mh__progress_set_default(enabled ? &p : NULL);
    if (env_quiet())
        mh__cli_set_quiet();
}

void mh__cli_progress_off(void)
{
    flockfile(stderr);
    erase_line();
    enabled = 0;
    mh__progress_set_default(NULL);
    funlockfile(stderr);
}

void mh__cli_progress_clear(void)
{
    if (!enabled)
        return;
    flockfile(stderr);
    erase_line();
    funlockfile(stderr);
}

void mh__cli_progress(const char *what, uint64_t done, uint64_t total)
{
    if (enabled)
        on_progress(NULL, what, done, total);
}
