/* cmd_info.c - `memhist info FILE`: what a .memhist file holds.
 *
 * Reads the whole file once (no model) and prints the format version, the
 * recorder's metadata, devices, time span, event counts by kind, dropped
 * events and, for a damaged file, where reading stopped and why. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json.h"

static const char usage[] =
    "usage: memhist info [--json] FILE\n\n"
    "Prints what a recording holds: format version, recorder and host details,\n"
    "devices, time span, event counts by kind, dropped events, and the byte offset\n"
    "where a damaged or cut file stops. Exits 0 whenever the file could be read,\n"
    "damaged or not (the status line says which), and 1 when reading failed\n"
    "(a read error, out of memory).\n\n"
    "options:\n"
    "  --json      print one JSON object\n"
    "  -h, --help  show this help\n";

static const char *utc_text(uint64_t ns, char buf[40])
{
    time_t s = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(buf, 40, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, 40, "?");
    else
        snprintf(buf + strlen(buf), 40 - strlen(buf), ".%03u UTC",
                 (unsigned)(ns / 1000000ull % 1000));
    return buf;
}

static const char *status_text(const struct mh_file_summary *s, const struct mh_reader *r)
{
    static char buf[600];
    if (s->damaged)
        snprintf(buf, sizeof buf, "damaged: %s", mh_reader_errmsg(r));
    else if (!s->has_trailer)
        snprintf(buf, sizeof buf, "incomplete: no trailer (the recording did not finish)");
    else
        snprintf(buf, sizeof buf, "complete");
    return buf;
}

static void print_text(const char *path, const struct mh_reader *r, const struct mh_file_summary *s)
{
    char b1[40], b2[40], k[256], v[1024];
    printf("%-16s %s\n", "file", path);
    printf("%-16s version %u\n", "format", s->format_version);
    const char *key, *value;
    const char *source = mh_reader_meta(r, "source");
    int imported = source && !strcmp(source, "imported");
    for (size_t i = 0; mh_reader_meta_at(r, i, &key, &value); i++) {
        if (imported && !strcmp(key, "pid"))
            continue; /* the importer's, not the recording's */
        if (imported && !strcmp(key, "host"))
            key = "imported on";
        if (imported && !strcmp(key, "start_ns"))
            key = "imported at ns";
        printf("%-16s ", mh__cli_text(key, k, sizeof k));
        /* multi-line values stay in their column, line by line */
        for (const char *line = value; *line;) {
            const char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line) : strlen(line);
            char part[1024];
            snprintf(part, sizeof part, "%.*s", (int)(n < sizeof part ? n : sizeof part - 1), line);
            for (char *t = part; (t = strchr(t, '\t')) != NULL;)
                *t = ' '; /* the settings' "type key value" columns */
            printf("%s", mh__cli_text(part, v, sizeof v));
            line += n + (end != NULL);
            if (*line)
                printf("\n%-16s ", "");
        }
        printf("\n");
    }
    for (size_t i = 0; i < mh_reader_device_count(r); i++) {
        struct mh_device_info d;
        if (mh_reader_device(r, i, &d) == 0)
            printf("device %-9d %s%s%s\n", d.device,
                   d.name[0] ? mh__cli_text(d.name, v, sizeof v) : "(unnamed)",
                   d.total_bytes ? ", " : "",
                   d.total_bytes ? mh__bytes_text(d.total_bytes, b1) : "");
    }
    if (s->events && mh_reader_meta(r, "synthetic_times")) {
        printf("%-16s %s\n", "first event", "unknown (the snapshot has no times)");
    } else if (s->events) {
        printf("%-16s %s\n", "first event", utc_text(s->first_time_ns, b1));
        printf("%-16s %s\n", "duration", mh__cli_duration(s->last_time_ns - s->first_time_ns, b2));
    }
    printf("%-16s %" PRIu64 "\n", "events", s->events);
    for (unsigned k = 0; k < MH_EV_KIND_COUNT; k++)
        if (s->events_by_kind[k])
            printf("  %-14s %" PRIu64 "\n", mh_event_kind_name(k), s->events_by_kind[k]);
    printf("%-16s %" PRIu64 "%s\n", "dropped", s->dropped,
           s->dropped ? " (the recorder's buffers were full)" : "");
    printf("%-16s %s\n", "status", status_text(s, r));
}

static void print_json(const char *path, const struct mh_reader *r, const struct mh_file_summary *s)
{
    struct mh__sink sink;
    struct mh__json j;
    mh__cli_json_begin(&j, &sink, "info");
    mh__json_kv_string(&j, "file", path);
    mh__json_kv_uint(&j, "format_version", s->format_version);
    mh__json_key(&j, "meta");
    mh__json_begin_object(&j);
    const char *key, *value;
    for (size_t i = 0; mh_reader_meta_at(r, i, &key, &value); i++)
        mh__json_kv_string(&j, key, value);
    mh__json_end_object(&j);
    mh__json_key(&j, "devices");
    mh__json_begin_array(&j);
    for (size_t i = 0; i < mh_reader_device_count(r); i++) {
        struct mh_device_info d;
        if (mh_reader_device(r, i, &d) != 0)
            continue;
        mh__json_begin_object(&j);
        mh__json_kv_int(&j, "device", d.device);
        mh__json_kv_string(&j, "name", d.name);
        mh__json_kv_uint(&j, "total_bytes", d.total_bytes);
        mh__json_end_object(&j);
    }
    mh__json_end_array(&j);
    mh__json_kv_uint(&j, "first_time_ns", s->first_time_ns);
    mh__json_kv_uint(&j, "last_time_ns", s->last_time_ns);
    mh__json_kv_uint(&j, "events", s->events);
    mh__json_key(&j, "events_by_kind");
    mh__json_begin_object(&j);
    for (unsigned k = 0; k < MH_EV_KIND_COUNT; k++)
        if (s->events_by_kind[k])
            mh__json_kv_uint(&j, mh_event_kind_name(k), s->events_by_kind[k]);
    mh__json_end_object(&j);
    mh__json_kv_uint(&j, "dropped", s->dropped);
    mh__json_kv_bool(&j, "complete", s->has_trailer && !s->damaged);
    mh__json_kv_bool(&j, "damaged", s->damaged);
    if (s->damaged) {
        mh__json_kv_uint(&j, "damage_offset", s->damage_offset);
        mh__json_kv_string(&j, "damage", mh_reader_errmsg(r));
    }
    mh__json_end_object(&j);
    mh__sink_finish(&sink);
}

static int run_info(int argc, char **argv);

const struct mh__cli_command mh__cmd_info = {
    "info", "show what a recording holds (devices, span, event counts, damage)", usage, run_info};

static int run_info(int argc, char **argv)
{
    int json = 0, first;
    const struct mh__cli_opt opts[] = {{"json", 0, MH__OPT_FLAG, &json, 0, 0, NULL, NULL},
                                      {NULL, 0, 0, NULL, 0, 0, NULL, NULL}};
    int rc = mh__cli_options(&mh__cmd_info, argc, argv, opts, &first);
    if (rc)
        return rc;
    if (first != argc - 1)
        return mh__cli_usage_error(&mh__cmd_info, "expected exactly one FILE");
    const char *path = argv[first];
    struct mh__session *ses;
    if (mh__session_open(path, &ses) < 0)
        return MH__EXIT_FAIL;
    rc = mh__session_skim(ses);
    const struct mh_reader *r = mh__session_reader(ses);
    struct mh_file_summary s;
    mh_reader_summary(r, &s);
    if (json)
        print_json(path, r, &s);
    else
        print_text(path, r, &s);
    /* damage of any kind is what info reports (exit 0); failing to read
     * the file at all is a failure */
    int failed = rc == MH_ENOMEM || rc == MH_EIO;
    if (failed)
        mh__cli_error("%s: %s", path, mh_reader_errmsg(r));
    mh__session_close(ses);
    return mh__cli_finish(failed ? MH__EXIT_FAIL : MH__EXIT_OK);
}
