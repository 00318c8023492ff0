/* cli_json.c - what every command's output shares when it carries strings
 * from a recording: the head of --json objects (schema version and command
 * name) and escaping for text output (see cli.h). */
#include <string.h>

#include "cli/cli.h"
#include "model/utf8.h"
#include "viz/json.h"
#include "viz/sink.h"

void mh_cli_json_begin(struct mh_json *j, struct mh_sink *sink, const char *command)
{
    mh_sink_init_file(sink, stdout);
    mh_json_init(j, sink, 1);
    mh_json_begin_object(j);
    mh_json_kv_int(j, "schema", MH_JSON_SCHEMA);
    mh_json_kv_string(j, "command", command);
}

const char *mh_cli_text(const char *s, char *buf, size_t len)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    if (mh__utf8_clean(s, n, MH_UTF8_ESC_CONTROL))
        return s;
    mh__utf8_escape(s, n, MH_UTF8_ESC_CONTROL, buf, len);
    return buf;
}
