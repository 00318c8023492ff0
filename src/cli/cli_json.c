/* cli_json.c - what every command's output shares when it carries strings
 * from a recording: the head of --json objects (schema version and command
 * name) and escaping for text output (see cli.h). */
#include <string.h>

#include "cli.h"
#include "json.h"
#include "sink.h"
#include "utf8.h"

void mh__cli_json_begin(struct mh__json *j, struct mh__sink *sink, const char *command)
{
    mh__sink_init_file(sink, stdout);
    mh__json_init(j, sink, 1);
    mh__json_begin_object(j);
    mh__json_kv_int(j, "schema", MH__JSON_SCHEMA);
    mh__json_kv_string(j, "command", command);
}

const char *mh__cli_text(const char *s, char *buf, size_t len)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    if (mh__utf8_clean(s, n, MH__UTF8_ESC_CONTROL))
        return s;
    mh__utf8_escape(s, n, MH__UTF8_ESC_CONTROL, buf, len);
    return buf;
}
