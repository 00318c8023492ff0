/* record_summary.c - what `memhist record` says when the program exits: one
 * block listing every file the run wrote (events, peak reserved, status)
 * and the one command that opens them all. Reads the status lines the
 * processes appended (src/python/memhist/_record.py) and replays each file
 * for its peak. Also clears the files an earlier run of the same output
 * left (FILE.rank<R>[.attempt<N>][.pid<P>], FILE.pid<P>), since the
 * processes create their files exclusively. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "grow.h"
#include "session.h"

/* True for ".rank0", ".rank0.attempt1.pid77", ".pid12", ".rank3.2": what
 * the processes of one run add to FILE. */
static int run_suffix(const char *s)
{
    static const char *const words[] = {"rank", "attempt", "pid", ""};
    if (!*s)
        return 0;
    while (*s == '.') {
        s++;
        size_t w = 0;
        while (words[w][0] && strncmp(s, words[w], strlen(words[w])) != 0)
            w++;
        s += strlen(words[w]);
        if (*s < '0' || *s > '9')
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

void mh__record_clear_previous(const char *out_abs)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", out_abs);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    const char *base = out_abs + (slash - dir) + 1;
    *slash = '\0';
    DIR *d = opendir(dir[0] ? dir : "/");
    size_t bl = strlen(base);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, bl) == 0 && run_suffix(e->d_name + bl)) {
            char p[2 * PATH_MAX + 2];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) /* a file an earlier run wrote */
                unlink(p);
        }
    }
    if (d)
        closedir(d);
}

/* The largest peak reserved over the file's devices and whether the file
 * is whole, as `info` would say. */
static uint64_t file_check(const char *path, char *state, size_t len)
{
    struct mh__session *ses = NULL;
    uint64_t best = 0;
    if (mh__session_open(path, &ses) < 0 || mh__session_run(ses, 0) < 0) {
        if (ses)
            mh__session_close(ses);
        snprintf(state, len, "unreadable");
        return 0;
    }
    const struct mh_model *m = mh__session_model(ses);
    for (size_t i = 0; i < mh_model_device_count(m); i++) {
        struct mh_peak p;
        if (mh_model_peak_reserved(m, mh_model_device_at(m, i), &p) == 0 && p.value > best)
            best = p.value;
    }
    struct mh_file_summary s;
    mh_reader_summary(mh__session_reader(ses), &s);
    if (s.damaged)
        snprintf(state, len, "damaged at byte %llu", (unsigned long long)s.damage_offset);
    else if (!s.has_trailer)
        snprintf(state, len, "not closed (the process was killed?)");
    else if (s.dropped)
        snprintf(state, len, "complete, %llu events dropped", (unsigned long long)s.dropped);
    else
        snprintf(state, len, "complete");
    mh__session_close(ses);
    return best;
}

static const char *shown(const char *path)
{
    static char cwd[PATH_MAX];
    size_t n;
    if (!getcwd(cwd, sizeof cwd))
        return path;
    n = strlen(cwd);
    return strncmp(path, cwd, n) == 0 && path[n] == '/' ? path + n + 1 : path;
}

struct status_line {
    char who[128], path[PATH_MAX], events[24], status[512];
};

static int read_lines(const char *status_path, struct status_line **out, size_t *n)
{
    FILE *f = fopen(status_path, "r");
    char line[4096];
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *who = strtok(line, "\t"), *path = strtok(NULL, "\t"), *events = strtok(NULL, "\t");
        char *status = strtok(NULL, "\n");
        if (!who || !path || !events || !status)
            continue;
        if (MH__GROW(*out, *n, cap, 8) < 0)
            break;
        struct status_line *l = &(*out)[(*n)++];
        snprintf(l->who, sizeof l->who, "%s", who);
        snprintf(l->path, sizeof l->path, "%s", path);
        snprintf(l->events, sizeof l->events, "%s", events);
        snprintf(l->status, sizeof l->status, "%s", status);
    }
    if (f)
        fclose(f);
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct status_line *)a)->path, ((const struct status_line *)b)->path);
}

/* The one command that opens every file: FILE, FILE.* or the list. */
static void print_next(const struct status_line *l, size_t n, size_t files, const char *out_abs)
{
    size_t ol = strlen(out_abs), under = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].path, "-") != 0 && strncmp(l[i].path, out_abs, ol) == 0 && l[i].path[ol] == '.')
            under++;
    if (files > 1 && under == files) {
        fprintf(stderr, "memhist: next: memhist report %s.*\n", shown(out_abs));
        return;
    }
    fprintf(stderr, "memhist: next: memhist report");
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].path, "-") != 0)
            fprintf(stderr, " %s", shown(l[i].path));
    fprintf(stderr, "\n");
}

int mh__record_summary(const char *status_path, const char *out_abs)
{
    struct status_line *l;
    size_t n, files = 0;
    char b[32];
    read_lines(status_path, &l, &n);
    for (size_t i = 0; i < n; i++)
        files += strcmp(l[i].path, "-") != 0;
    int quiet = mh__cli_is_quiet();
    if (files && !quiet)
        fprintf(stderr, "memhist: %zu file%s written:\n", files, files == 1 ? "" : "s");
    qsort(l, n, sizeof *l, by_path);
    for (size_t i = 0; i < n && files && !quiet; i++) {
        char state[96];
        if (strcmp(l[i].path, "-") == 0)
            continue;
        uint64_t peak = file_check(l[i].path, state, sizeof state);
        fprintf(stderr, "  %-28s %9s events  peak reserved %11s  %-9s %s", shown(l[i].path), l[i].events,
                mh__bytes_text(peak, b), state, l[i].who);
        if (strcmp(l[i].status, "recording") != 0 && strcmp(l[i].status, "complete") != 0)
            fprintf(stderr, ": %s", l[i].status);
        fprintf(stderr, "\n");
    }
    for (size_t i = 0; i < n && !files; i++)
        fprintf(stderr, "memhist: warning: %s: nothing recorded: %s\n", l[i].who,
                strncmp(l[i].status, "not recording: ", 15) == 0 ? l[i].status + 15 : l[i].status);
    if (files) {
        if (!quiet)
            print_next(l, n, files, out_abs);
    } else if (n == 0 && access(out_abs, F_OK) == 0) {
        files++;
        if (!quiet)
            fprintf(stderr, "memhist: recorded driver-level memory and kernels (CUDA injection) to "
                            "%s\nmemhist: next: memhist report %s\n", shown(out_abs), shown(out_abs));
    } else if (n == 0) {
        fprintf(stderr, "memhist: warning: nothing recorded to %s: the program neither loaded the "
                        "memhist Python bootstrap nor initialized CUDA\n", shown(out_abs));
    }
    free(l);
    return (int)files;
}
