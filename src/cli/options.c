/* options.c - the one option parser of the subcommands (see cli.h): a
 * table of options, getopt_long underneath (options may follow the
 * operands), values checked as they are read, and one style of usage error
 * ("unknown option '--x'", "invalid value 'v' for --name (hint)", "option
 * '--name' needs a value"). Every command also takes -q/--quiet (no
 * progress line, no status lines; see mh__cli_set_quiet). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_OPTS 24
#define OPT_QUIET 255

static int set_value(const struct mh__cli_opt *o, const char *arg)
{
    char *end;
    double f;
    switch (o->kind) {
    case MH__OPT_FLAG:
        *(int *)o->out = 1;
        return 0;
    case MH__OPT_TEXT:
        *(const char **)o->out = arg;
        return 0;
    case MH__OPT_UINT:
        return mh__cli_parse_uint(arg, o->lo, o->hi, o->out);
    case MH__OPT_INT: {
        uint64_t v;
        if (mh__cli_parse_uint(arg, o->lo, o->hi, &v) != 0)
            return -1;
        *(int *)o->out = (int)v;
        return 0;
    }
    case MH__OPT_SIZE:
        return mh__cli_parse_size(arg, o->out) != 0 || *(uint64_t *)o->out == 0 ? -1 : 0;
    case MH__OPT_FRACTION:
        f = strtod(arg, &end);
        if (end == arg || *end || !(f > 0.0 && f <= 1.0))
            return -1;
        *(double *)o->out = f;
        return 0;
    default:
        return -1;
    }
}

static int parse(const struct mh__cli_command *cmd, int argc, char **argv,
                 const struct mh__cli_opt *opts, int in_order, int *first)
{
    struct option lo[MAX_OPTS + 2];
    char shorts[2 * MAX_OPTS + 4] = "+:q";
    size_t n = 0, ns = 3;
    for (; opts[n].name && n < MAX_OPTS; n++) {
        int arg = opts[n].kind != MH__OPT_FLAG;
        lo[n] = (struct option){opts[n].name, arg ? required_argument : no_argument, NULL,
                                256 + (int)n};
        if (opts[n].short_name) {
            shorts[ns++] = opts[n].short_name;
            if (arg)
                shorts[ns++] = ':';
        }
    }
    lo[n] = (struct option){"quiet", no_argument, NULL, OPT_QUIET};
    lo[n + 1] = (struct option){NULL, 0, NULL, 0};
    shorts[ns] = '\0';
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts + !in_order, lo, NULL)) != -1) {
        if (c == '?')
            return mh__cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        if (c == ':')
            return mh__cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        if (c == OPT_QUIET || c == 'q') {
            mh__cli_set_quiet();
            continue;
        }
        size_t i = 0;
        while (i < n && !(c == 256 + (int)i || (c < 256 && c == opts[i].short_name)))
            i++;
        if (i == n || set_value(&opts[i], optarg) != 0)
            return mh__cli_usage_error(cmd, "invalid value '%s' for --%s%s%s%s", optarg,
                                       opts[i].name, opts[i].hint ? " (" : "",
                                       opts[i].hint ? opts[i].hint : "", opts[i].hint ? ")" : "");
        if (opts[i].seen)
            *opts[i].seen = 1;
    }
    *first = optind;
    return 0;
}

int mh__cli_options(const struct mh__cli_command *cmd, int argc, char **argv,
                    const struct mh__cli_opt *opts, int *first)
{
    return parse(cmd, argc, argv, opts, 0, first);
}

int mh__cli_options_in_order(const struct mh__cli_command *cmd, int argc, char **argv,
                             const struct mh__cli_opt *opts, int *first)
{
    return parse(cmd, argc, argv, opts, 1, first);
}
