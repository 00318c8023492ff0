/* cmd_import.c - `memhist import`: a PyTorch memory snapshot pickle to a
 * .memhist file, read with memhist's own strict pickle reader (nothing in
 * the file is ever imported or called). Library side: src/import/snapshot_import.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "cli.h"
#include "snapshot_import.h"

extern const struct mh__cli_command mh__cmd_import;

#define MAX_INPUT (16ull << 30)
#define LARGE_INPUT (32u << 20) /* the read-whole note from here on */

/* Opens the input: a regular file, a pipe or stdin. Directories and devices
 * are refused (a device such as /dev/zero never ends). */
static FILE *open_input(const char *path, size_t *size_hint)
{
    *size_hint = 0;
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    struct stat st;
    if (!fp || fstat(fileno(fp), &st) != 0)
        return fp;
    if (S_ISREG(st.st_mode)) {
        *size_hint = (size_t)st.st_size;
        return fp;
    }
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
        return fp;
    if (fp != stdin)
        fclose(fp);
    errno = S_ISDIR(st.st_mode) ? EISDIR : ENODEV;
    return NULL;
}

/* Maps a regular file read-only (the importer gives pages it has read back
 * to the system, so the file costs no memory); 1 if it is not one. */
static int map_file(FILE *fp, size_t size, unsigned char **data, size_t *len)
{
    if (fp == stdin || size == 0)
        return 1;
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fileno(fp), 0);
    if (p == MAP_FAILED)
        return 1;
    fclose(fp);
    *data = p;
    *len = size;
    return 0;
}

/* Reads a whole file ("-" = stdin) into memory, or maps it (*mapped);
 * errno says why on MH_EIO. */
static int slurp(const char *path, unsigned char **data, size_t *len, int *mapped)
{
    size_t hint;
    FILE *fp = open_input(path, &hint);
    *mapped = 0;
    if (!fp)
        return MH_EIO;
    if (hint > MAX_INPUT) {
        if (fp != stdin)
            fclose(fp);
        return MH_ELIMIT;
    }
    if (map_file(fp, hint, data, len) == 0) {
        *mapped = 1;
        return 0;
    }
    size_t cap = hint ? hint + 1 : 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    int rc = buf ? 0 : MH_ENOMEM;
    while (!rc) {
        if (n == cap) {
            unsigned char *p = cap < MAX_INPUT ? realloc(buf, cap * 2) : NULL;
            if (!p) {
                rc = cap < MAX_INPUT ? MH_ENOMEM : MH_ELIMIT;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) {
            if (ferror(fp))
                rc = MH_EIO;
            break;
        }
    }
    int e = errno;
    if (fp != stdin)
        fclose(fp);
    errno = e;
    if (rc) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = n;
    return 0;
}

/* What a file that is not a memory snapshot pickle looks like, or NULL. */
static const char *not_a_snapshot(const unsigned char *d, size_t n)
{
    static const unsigned char legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9};
    if (n >= 4 && !memcmp(d, "PK\x03\x04", 4))
        return "a zip archive (torch.save writes these), not a memory snapshot pickle";
    if (n >= sizeof legacy && !memcmp(d, legacy, sizeof legacy))
        return "a legacy torch.save file, not a memory snapshot pickle";
    if (n >= 8 && !memcmp(d, "\x89MEMHIST", 8))
        return "already a .memhist file";
    return NULL;
}

static int parse_args(int argc, char **argv, const char **in, const char **out)
{
    *in = *out = NULL;
    const struct mh__cli_opt opts[] = {{"output", 'o', MH__OPT_TEXT, out, 0, 0, NULL, NULL},
                                      {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int first, rc = mh__cli_options(&mh__cmd_import, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first >= argc)
        return mh__cli_usage_error(&mh__cmd_import, "missing the snapshot pickle");
    if (first + 1 < argc)
        return mh__cli_usage_error(&mh__cmd_import, "more than one input file");
    *in = argv[first];
    if (!*out)
        return mh__cli_usage_error(&mh__cmd_import, "missing -o OUT.memhist");
    return 0;
}

static void print_summary(const char *out, const struct mh__import_info *info, size_t len)
{
    mh__cli_status_wrote(out, NULL, "%llu trace entries on %d device%s, %llu segments and %llu live "
           "blocks before the trace, %llu annotations, pickle protocol %d",
           (unsigned long long)info->entries, info->devices, info->devices == 1 ? "" : "s",
           (unsigned long long)info->preexisting_segments,
           (unsigned long long)info->preexisting_blocks, (unsigned long long)info->annotations,
           info->protocol);
    if (info->synthetic_times)
        mh__cli_error("note: the snapshot has no time_us; entries were given times 1 us apart");
    if (!info->streamed && len >= LARGE_INPUT)
        mh__cli_error("note: the pickle is not laid out as torch writes snapshots, so it was "
                      "read whole: memory grew with the file, not with its largest record");
    if (info->skipped)
        mh__cli_error("note: %llu entries of display-only or unknown actions were skipped",
                      (unsigned long long)info->skipped);
    if (info->inconsistencies)
        mh__cli_error("warning: %llu trace entries contradict the snapshot's segments; the "
                      "replayed state may differ from them",
                      (unsigned long long)info->inconsistencies);
    if (info->overflowed)
        mh__cli_error("note: torch's trace buffer had wrapped: the trace starts mid-run");
    if (info->steps)
        mh__cli_error("note: %llu step%s from the snapshot's Optimizer.step/ProfilerStep "
                     "annotations",
                     (unsigned long long)info->steps, info->steps == 1 ? "" : "s");
    else if (info->entries && !info->annotations)
        mh__cli_error("note: the snapshot has no step annotations: analyses go by time");
    if (info->unknown_initial)
        mh__cli_error("warning: %llu block(s) allocated before the trace and freed during "
                     "it: their sizes are estimated from the requests, so the state before "
                     "the trace is not exact",
                     (unsigned long long)info->unknown_initial);
}

static const char *slurp_error(int rc)
{
    if (rc == MH_ELIMIT)
        return "larger than the 16 GiB an import reads";
    if (rc == MH_EIO && errno == ENODEV)
        return "a device, not a file (import reads a regular file, a pipe or standard input)";
    return rc == MH_EIO ? strerror(errno) : mh_strerror(rc);
}

/* Converts the snapshot into an open output; prints why on failure. */
static int convert(const char *in, const unsigned char *data, size_t len, int mapped,
                   const char *out, struct mh__outfile *of, struct mh__import_info *info)
{
    struct mh_writer_opts wo;
    memset(&wo, 0, sizeof wo);
    wo.source = "imported";
    struct mh_writer *w;
    int rc = mh_writer_open_fd(of->fd, &wo, &w);
    if (rc < 0) {
        mh__cli_error("%s: %s", out, mh_strerror(rc));
        return rc;
    }
    char err[256] = "";
    struct mh__import_opts o;
    memset(&o, 0, sizeof o);
    o.mapped = mapped;
    o.name = in;
    rc = mh__snapshot_import_with(data, len, &o, w, info, err, sizeof err);
    int crc = mh_writer_close(w);
    int errnum = errno;
    if (crc == MH_EIO) /* the output failed: say why, whatever the import met after */
        mh__cli_error("%s: cannot write: %s", out, strerror(errnum));
    else if (rc < 0)
        mh__cli_error("%s: %s%s%s", in, mh_strerror(rc), err[0] ? ": " : "", err);
    else if (crc < 0)
        mh__cli_error("%s: %s", out, mh_strerror(crc));
    return rc < 0 ? rc : crc;
}

static int run(int argc, char **argv)
{
    const char *in, *out;
    int rc = parse_args(argc, argv, &in, &out);
    if (rc)
        return rc;
    unsigned char *data;
    size_t len;
    int mapped;
    if ((rc = slurp(in, &data, &len, &mapped)) < 0) {
        mh__cli_error("%s: cannot read the file: %s", in, slurp_error(rc));
        return MH__EXIT_FAIL;
    }
    const char *what = not_a_snapshot(data, len);
    struct mh__outfile of;
    if (what) {
        mh__cli_error("%s: %s", in, what);
        rc = MH_EFORMAT;
    } else if ((rc = mh__cli_output_open(&of, out, &in, 1)) == 0) {
        struct mh__import_info info;
        rc = mh__cli_output_close(&of, out, convert(in, data, len, mapped, out, &of, &info), 0);
        if (rc == 0 && strcmp(out, "-") != 0)
            print_summary(out, &info, len);
    }
    if (mapped)
        munmap(data, len);
    else
        free(data);
    return rc < 0 ? MH__EXIT_FAIL : mh__cli_finish(MH__EXIT_OK);
}
const struct mh__cli_command mh__cmd_import = {
    .name = "import",
    .summary = "convert a PyTorch memory snapshot pickle into a .memhist file",
    .usage = "usage: memhist import SNAPSHOT.pickle -o OUT.memhist\n"
             "\n"
             "Reads a snapshot written by torch.cuda.memory._dump_snapshot() (every schema\n"
             "from torch 2.0 to 2.15: tested on real snapshots of torch 2.0/2.1, of 2.5 or\n"
             "later and of 2.15, and on hand-built ones of each schema; pickle protocols 0\n"
             "to 5) with memhist's own pickle reader, which accepts plain data only and\n"
             "refuses anything that would import or call code, so untrusted snapshots are\n"
             "safe to open. The blocks and segments that were live before the trace began\n"
             "are rebuilt from the snapshot at their real sizes and written first, so\n"
             "`memhist report`, `plot` and `snapshot` on the output end at exactly the\n"
             "snapshot's segments. Steps and phases come from the Optimizer.step# and\n"
             "ProfilerStep# annotations as in a live recording. Every field torch wrote is\n"
             "kept, and `memhist snapshot` writes it back. Large snapshots are read record\n"
             "by record (memory follows the largest record, not the file; the trace goes to\n"
             "a temporary file in $TMPDIR or /tmp).\n"
             "\n"
             "options:\n"
             "  -o, --output PATH    the .memhist file to write ('-' = stdout)\n",
    .run = run,
};
