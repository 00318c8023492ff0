/* cli_common.c - messages, option values and units shared by the subcommands
 * (see cli.h). */
#include <ctype.h>
#include <limits.h>
#include <sys/stat.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void mh__cli_error(const char *fmt, ...)
{
    va_list ap;
    flockfile(stderr); /* one line, also when files are read on several threads */
    mh__cli_progress_clear();
    fputs("memhist: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    funlockfile(stderr);
}

/* The status lines of the running command (see mh__cli_status). */
static char status[4][512];
static size_t nstatus;
static int quiet;

void mh__cli_set_quiet(void)
{
    quiet = 1;
    mh__cli_progress_off();
}

int mh__cli_is_quiet(void)
{
    return quiet;
}

void mh__cli_status(const char *fmt, ...)
{
    if (quiet || nstatus == sizeof status / sizeof status[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(status[nstatus++], sizeof status[0], fmt, ap);
    va_end(ap);
}

void mh__cli_status_wrote(const char *path, const char *tail, const char *fmt, ...)
{
    char details[400], size[32];
    struct stat st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(details, sizeof details, fmt, ap);
    va_end(ap);
    if (stat(path, &st) == 0)
        mh__cli_status("wrote %s (%s%s%s)%s", path, mh__bytes_text((uint64_t)st.st_size, size),
                       details[0] ? ", " : "", details, tail ? tail : "");
    else
        mh__cli_status("wrote %s%s%s%s%s", path, details[0] ? " (" : "", details,
                       details[0] ? ")" : "", tail ? tail : "");
}

void mh__cli_print_status(void)
{
    for (size_t i = 0; i < nstatus; i++)
        mh__cli_error("%s", status[i]);
    nstatus = 0;
}

int mh__cli_usage_error(const struct mh__cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    mh__cli_progress_clear();
    fprintf(stderr, "memhist %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'memhist help %s' for usage.\n", cmd->name);
    return MH__EXIT_USAGE;
}

int mh__cli_print_usage(const struct mh__cli_command *cmd)
{
    printf("memhist %s - %s\n\n%s", cmd->name, cmd->summary, cmd->usage);
    return MH__EXIT_OK;
}

int mh__cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int mh__cli_finish(int code)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        mh__cli_error("could not write to standard output: %s", strerror(errno));
        return MH__EXIT_FAIL;
    }
    return code;
}

static int unit_multiplier(const char *unit, double *mult)
{
    static const struct {
        const char *name;
        double mult;
    } units[] = {{"", 1},          {"b", 1},           {"k", 1024.0},     {"kb", 1024.0},
                 {"kib", 1024.0},  {"m", 1048576.0},   {"mb", 1048576.0}, {"mib", 1048576.0},
                 {"g", 1073741824.0}, {"gb", 1073741824.0}, {"gib", 1073741824.0},
                 {"t", 1099511627776.0}, {"tb", 1099511627776.0}, {"tib", 1099511627776.0}};
    char low[8] = {0};
    size_t n = strlen(unit);
    if (n >= sizeof low)
        return MH_EINVAL;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)unit[i]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(low, units[i].name) == 0) {
            *mult = units[i].mult;
            return 0;
        }
    return MH_EINVAL;
}

int mh__cli_parse_size(const char *text, uint64_t *out)
{
    if (!text || !*text || *text == '-')
        return MH_EINVAL;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !isfinite(v) || v < 0)
        return MH_EINVAL;
    while (*end == ' ')
        end++;
    double mult;
    if (unit_multiplier(end, &mult) != 0)
        return MH_EINVAL;
    double bytes = v * mult;
    if (bytes >= 18446744073709551615.0)
        return MH_EINVAL;
    *out = (uint64_t)(bytes + 0.5);
    return 0;
}

int mh__cli_parse_uint(const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return MH_EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return MH_EINVAL;
    *out = v;
    return 0;
}

const char *mh__cli_duration(uint64_t ns, char buf[32])
{
    if (ns < 1000)
        snprintf(buf, 32, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, 32, "%.1f us", ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, 32, "%.1f ms", ns / 1e6);
    else
        snprintf(buf, 32, "%.2f s", ns / 1e9);
    return buf;
}

int mh__cli_is_file(const char *dir, const char *name)
{
    char p[PATH_MAX + 256];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Characters (UTF-8 code points) in the first `len` bytes of s. */
static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* Byte offset of the k-th character of s (len bytes; len past the last). */
static size_t utf8_offset(const char *s, size_t len, size_t k)
{
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && k-- == 0)
            return i;
    return len;
}

int mh__cli_fit_width(int width, const char *name)
{
    size_t n = utf8_chars(name, strlen(name));
    if (n > MH__CLI_NAME_MAX)
        n = MH__CLI_NAME_MAX;
    return (int)n > width ? (int)n : width;
}

void mh__cli_print_fitted(const char *name, int width)
{
    size_t len = strlen(name), n = utf8_chars(name, len);
    if (n <= (size_t)width || width < 5) {
        printf("%s%*s", name, n < (size_t)width ? width - (int)n : 0, "");
        return;
    }
    size_t head = (size_t)(width - 3) / 2, tail = (size_t)width - 3 - head;
    size_t head_end = utf8_offset(name, len, head), tail_start = utf8_offset(name, len, n - tail);
    printf("%.*s...%s", (int)head_end, name, name + tail_start);
}
