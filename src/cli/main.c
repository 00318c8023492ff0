/* main.c - the `memhist` command table and dispatch.
 *
 * Each subcommand is defined in its own cmd_<name>.c. Entries are weak
 * references, so the table lists every command the tool knows and shows the
 * ones built into this binary. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "diag.h"

/* clang-format off */
#define MH__COMMANDS(X) \
    X(record) \
    X(info) \
    X(report) \
    X(oom) \
    X(layers) \
    X(growth) \
    X(plot) \
    X(flame) \
    X(snapshot) \
    X(import) \
    X(trace) \
    X(simulate) \
    X(fit) \
    X(whatif) \
    X(diff) \
    X(export) \
    X(view)
/* clang-format on */

#define MH__X_DECL(n) extern const struct mh__cli_command mh__cmd_##n __attribute__((weak));
MH__COMMANDS(MH__X_DECL)
#undef MH__X_DECL

static const struct mh__cli_command *const commands[] = {
#define MH__X_ENTRY(n) &mh__cmd_##n,
    MH__COMMANDS(MH__X_ENTRY)
#undef MH__X_ENTRY
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct mh__cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i] && strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static int print_help(void)
{
    printf("memhist %s - GPU memory history recorder and visualizer\n\n"
           "usage: memhist [-q] COMMAND [OPTIONS] [FILE...]\n\n"
           "commands:\n",
           mh_version_string());
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i])
            printf("  %-10s %s\n", commands[i]->name, commands[i]->summary);
    printf("  %-10s %s\n", "help", "show the help of a command");
    printf("\nEvery command also takes:\n"
           "  -q, --quiet  no progress line and no status lines, only warnings and errors\n"
           "               (also before the command's name; MEMHIST_QUIET=1 does the same);\n"
           "               the progress line is drawn on stderr only when it is a terminal\n"
           "               and work takes over a second\n"
           "  -h, --help   show the command's help\n");
    printf("\nRun 'memhist help COMMAND' or 'memhist COMMAND -h' for a command's options.\n");
    return mh__cli_finish(MH__EXIT_OK);
}

static const char help_usage[] =
    "usage: memhist help [COMMAND]\n\n"
    "Shows the list of commands, or COMMAND's usage and options (the same as\n"
    "'memhist COMMAND -h').\n";

static int help_command(int argc, char **argv)
{
    if (argc < 2)
        return print_help();
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "--help") == 0) {
        fputs(help_usage, stdout);
        return mh__cli_finish(MH__EXIT_OK);
    }
    const struct mh__cli_command *cmd = find_command(argv[1]);
    if (!cmd) {
        mh__cli_error("no command named '%s'; run 'memhist --help' for the list", argv[1]);
        return MH__EXIT_USAGE;
    }
    return mh__cli_finish(mh__cli_print_usage(cmd));
}

/* Where the libraries' warnings and errors go: one line on stderr. */
static void print_diag(void *user, const char *message)
{
    mh__cli_error("%s", message);
}

/* A file-size limit (ulimit -f) must not kill the tool halfway through an
 * output: with this handler the write fails with EFBIG, which every writer
 * reports and cleans up after. A handler, unlike SIG_IGN, is reset by exec,
 * so programs that memhist runs keep the default. */
static void on_file_size_limit(int sig)
{
    (void)sig;
}

int main(int argc, char **argv)
{
    mh__diag_set(print_diag, NULL);
    mh__cli_progress_setup();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_file_size_limit;
    sigaction(SIGXFSZ, &sa, NULL);
    while (argc >= 2 && (strcmp(argv[1], "-q") == 0 || strcmp(argv[1], "--quiet") == 0)) {
        mh__cli_set_quiet(); /* also taken before the command */
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    if (argc < 2) {
        print_help();
        return MH__EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0)
        return print_help();
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("memhist %s (file format %d)\n", mh_version_string(), MH_FORMAT_VERSION);
        return mh__cli_finish(MH__EXIT_OK);
    }
    if (strcmp(name, "help") == 0)
        return help_command(argc - 1, argv + 1);
    const struct mh__cli_command *cmd = find_command(name);
    if (!cmd) {
        mh__cli_error("unknown command '%s'; run 'memhist --help' for the list", name);
        return MH__EXIT_USAGE;
    }
    if (mh__cli_wants_help(argc - 1, argv + 1))
        return mh__cli_finish(mh__cli_print_usage(cmd));
    int rc = cmd->run(argc - 1, argv + 1);
    mh__cli_progress_clear();
    if (rc == MH__EXIT_OK)
        mh__cli_print_status();
    return rc;
}
