/* fit_command.c - the command `memhist fit` runs: the words after "--",
 * where {NAME} stands for the value tried, in any argument ("--batch
 * {batch}", "--batch={batch}") or in an environment assignment before the
 * program ("BATCH={batch} python train.py"), as a shell would take it.
 * Finds the names, replaces them, and applies the assignments in the child
 * before it runs `memhist simulate` (fit_trial.c). Also the two small
 * parsers of fit's options: the range LO..HI and the headroom. */
#include <ctype.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

/* Length of the name in "{name}" at s (s[0] == '{'), 0 if it is none. */
static size_t brace_name(const char *s)
{
    size_t n = 1;
    while (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '-')
        n++;
    return n > 1 && s[n] == '}' ? n - 1 : 0;
}

/* Whether `word` is VAR=VALUE with a valid variable name. */
static int is_assignment(const char *word)
{
    if (!(isalpha((unsigned char)word[0]) || word[0] == '_'))
        return 0;
    size_t i = 1;
    while (isalnum((unsigned char)word[i]) || word[i] == '_')
        i++;
    return word[i] == '=';
}

int mh__fit_command_env_count(char **argv)
{
    int n = 0;
    while (argv[n] && is_assignment(argv[n]))
        n++;
    return n;
}

int mh__fit_command_first_name(char **argv, char *out, size_t len)
{
    for (size_t i = 0; argv[i]; i++)
        for (const char *p = strchr(argv[i], '{'); p; p = strchr(p + 1, '{')) {
            size_t n = brace_name(p);
            if (n && n < len) {
                memcpy(out, p + 1, n);
                out[n] = '\0';
                return 0;
            }
        }
    return -1;
}

/* Occurrences of {name} in `word`. */
static size_t occurrences(const char *word, const char *name)
{
    size_t n = 0, nl = strlen(name);
    for (const char *p = strchr(word, '{'); p; p = strchr(p + 1, '{'))
        n += strncmp(p + 1, name, nl) == 0 && p[nl + 1] == '}';
    return n;
}

int mh__fit_command_uses(const struct mh__fit_command *c)
{
    for (size_t i = 0; c->argv[i]; i++)
        if (occurrences(c->argv[i], c->name))
            return 1;
    return 0;
}

char **mh__fit_command_expand(const struct mh__fit_command *c, int64_t value)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRId64, value);
    size_t nw = 0, bytes = 0, nl = strlen(c->name), vl = strlen(num);
    for (; c->argv[nw]; nw++)
        bytes += strlen(c->argv[nw]) + 1 + occurrences(c->argv[nw], c->name) * vl;
    char **out = malloc((nw + 1) * sizeof *out + bytes);
    if (!out)
        return NULL;
    char *w = (char *)(out + nw + 1);
    for (size_t i = 0; i < nw; i++) {
        out[i] = w;
        for (const char *p = c->argv[i]; *p;) {
            if (p[0] == '{' && strncmp(p + 1, c->name, nl) == 0 && p[nl + 1] == '}') {
                memcpy(w, num, vl);
                w += vl;
                p += nl + 2;
            } else {
                *w++ = *p++;
            }
        }
        *w++ = '\0';
    }
    out[nw] = NULL;
    return out;
}

void mh__fit_command_text(char **argv, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; argv[i] && used + 1 < len; i++) {
        int quote = argv[i][0] == '\0' || strpbrk(argv[i], " \t\"'$`\\") != NULL;
        int n = snprintf(out + used, len - used, "%s%s%s%s", i ? " " : "", quote ? "'" : "",
                         argv[i], quote ? "'" : "");
        if (n < 0)
            break;
        used += (size_t)n < len - used ? (size_t)n : len - used - 1;
    }
}

int mh__fit_command_apply_env(char **words, int nenv)
{
    for (int i = 0; i < nenv; i++) {
        char *eq = strchr(words[i], '=');
        *eq = '\0';
        int rc = setenv(words[i], eq + 1, 1);
        *eq = '=';
        if (rc != 0)
            return -1;
    }
    return 0;
}

int mh__fit_parse_range(const char *text, int64_t *lo, int64_t *hi)
{
    const char *dots = strstr(text, "..");
    uint64_t a, b;
    char first[32];
    if (!dots || (size_t)(dots - text) >= sizeof first)
        return -1;
    memcpy(first, text, (size_t)(dots - text));
    first[dots - text] = '\0';
    if (mh__cli_parse_uint(first, 0, INT32_MAX, &a) ||
        mh__cli_parse_uint(dots + 2, 0, INT32_MAX, &b))
        return -1;
    *lo = (int64_t)a;
    *hi = (int64_t)b;
    return 0;
}

int mh__fit_parse_headroom(const char *text, uint64_t usable, uint64_t *out)
{
    size_t n = text ? strlen(text) : 0;
    if (!text) {
        *out = 0;
        return 0;
    }
    if (n && text[n - 1] == '%') {
        char *end;
        double p = strtod(text, &end);
        if (end != text + n - 1 || !(p >= 0 && p < 100))
            return -1;
        *out = (uint64_t)((double)usable * p / 100.0);
        return 0;
    }
    return mh__cli_parse_size(text, out) ? -1 : 0;
}
