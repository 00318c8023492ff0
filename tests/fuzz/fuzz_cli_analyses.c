/* fuzz_cli_analyses.c - libFuzzer target for the command-line analyses on a
 * fuzzed .memhist file: runs info, report (text and JSON), oom, layers,
 * whatif, diff, snapshot, trace (JSON, protobuf, --around) and flame
 * in-process on the input, as a user would on a damaged recording. Their
 * messages are discarded (the sanitizers still report on the process's own
 * standard error).
 * seeds: format */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"

extern const struct mh__cli_command mh__cmd_info, mh__cmd_report, mh__cmd_oom, mh__cmd_layers,
    mh__cmd_whatif, mh__cmd_diff, mh__cmd_snapshot, mh__cmd_trace, mh__cmd_flame;

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(path, sizeof path, "/tmp/fuzz_cli_analyses_%d.memhist", (int)getpid());
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        stderr = devnull;
        fflush(stdout);
        dup2(fileno(devnull), STDOUT_FILENO);
    }
    return 0;
}

static void run(const struct mh__cli_command *cmd, const char *a1, const char *a2, const char *a3,
                const char *a4)
{
    char *argv[6] = {(char *)cmd->name, (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
    int argc = 1;
    while (argc < 5 && argv[argc])
        argc++;
    cmd->run(argc, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    size_t ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0 || !ok)
        return 0;
    run(&mh__cmd_info, path, NULL, NULL, NULL);
    run(&mh__cmd_report, path, NULL, NULL, NULL);
    run(&mh__cmd_report, "--json", path, NULL, NULL);
    run(&mh__cmd_oom, path, NULL, NULL, NULL);
    run(&mh__cmd_layers, path, NULL, NULL, NULL);
    run(&mh__cmd_whatif, path, "--alloc-conf", "expandable_segments:True", NULL);
    run(&mh__cmd_diff, path, path, NULL, NULL);
    run(&mh__cmd_snapshot, path, "-o", "/dev/null", NULL);
    run(&mh__cmd_trace, path, "-o", "/dev/null", NULL);
    run(&mh__cmd_trace, path, "-o", "/dev/null", "--format=perfetto");
    run(&mh__cmd_trace, path, "--around=peak", "-o", "/dev/null");
    run(&mh__cmd_flame, path, "-o", "/dev/null", NULL);
    run(&mh__cmd_flame, path, "--folded", "-o", "/dev/null");
    unlink(path);
    return 0;
}
