/* view_page.c - writes `memhist view`'s page: the HTML skeleton, the inline
 * CSS and JavaScript (view.css, view.js, built in by cmake/embed_text.cmake)
 * and the data block, a JSON document of the recordings' parts and, for
 * several files, the rank table with its spread and worst rank
 * (job_ranks.h). Nothing is loaded from elsewhere. */
#include <string.h>

#include "categories.h"
#include "job_ranks.h"
#include "memhist/version.h"
#include "palette.h"
#include "view_int.h"

/* Writes `len` bytes of JSON with "</" as "<\/", so no string in it can
 * close the script element holding it. */
static void put_json(struct mh__sink *out, const char *s, size_t len)
{
    size_t from = 0;
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == '<' && s[i + 1] == '/') {
            mh__sink_write(out, s + from, i + 1 - from);
            mh__sink_puts(out, "\\");
            from = i + 1;
        }
    mh__sink_write(out, s + from, len - from);
}

static void json_peak(struct mh__json *j, const char *key, const struct mh_peak *p)
{
    mh__json_key(j, key);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "value", p->value);
    mh__json_kv_uint(j, "time_ns", p->time_ns);
    mh__json_kv_int(j, "step", p->step);
    mh__json_end_object(j);
}

static void json_ranks(struct mh__json *j, const struct mh__rank_row *rows, size_t n, uint64_t t0)
{
    struct mh__job_spread sp;
    mh__job_spread(rows, n, &sp);
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "t0_ns", t0);
    mh__json_kv_uint(j, "worst", sp.max);
    mh__json_kv_uint(j, "least", sp.min);
    mh__json_kv_uint(j, "farthest", sp.far);
    mh__json_kv_uint(j, "median_peak_reserved", sp.median);
    mh__json_kv_uint(j, "tied", sp.tied);
    mh__json_key(j, "rows");
    mh__json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        const struct mh__rank_row *r = &rows[i];
        mh__json_begin_object(j);
        mh__json_kv_string(j, "path", r->path);
        mh__json_kv_string(j, "host", r->host);
        mh__json_kv_int(j, "rank", r->rank);
        mh__json_kv_int(j, "device", r->device);
        mh__json_kv_bool(j, "helper", r->helper);
        json_peak(j, "peak_allocated", &r->alloc);
        json_peak(j, "peak_reserved", &r->reserved);
        mh__json_kv_uint(j, "steps", r->steps);
        mh__json_kv_uint(j, "ooms", r->ooms);
        mh__json_kv_double(j, "fragmentation", r->frag, 4);
        mh__json_end_object(j);
    }
    mh__json_end_array(j);
    mh__json_end_object(j);
}

/* The categories' names and colours, the site groups' colours (the last for
 * everything else; palette.h) and the event kinds' names. */
static void put_legend(struct mh__sink *out)
{
    mh__sink_puts(out, "\"categories\":[");
    for (int c = 0; c < MH__CAT_COUNT; c++)
        mh__sink_printf(out, "%s[\"%s\",\"#%06x\"]", c ? "," : "", mh__category_name(c),
                        (unsigned)mh__palette_category(c));
    mh__sink_puts(out, "],\"group_colors\":[");
    for (unsigned g = 0; g < MH__PALETTE_GROUPS; g++)
        mh__sink_printf(out, "%s\"#%06x\"", g ? "," : "", (unsigned)mh__palette_group(g));
    mh__sink_printf(out, ",\"#%06x\"", (unsigned)MH__COL_REST);
    mh__sink_puts(out, "],\"event_kinds\":[");
    for (unsigned k = 0; k <= MH_EV_OOM; k++)
        mh__sink_printf(out, "%s\"%s\"", k ? "," : "", mh_event_kind_name(k));
    mh__sink_puts(out, "]");
}

static void put_data(struct mh__sink *out, const char *title, struct mh__view_part *const *parts,
                     const struct mh__rank_row *rows, size_t n, uint64_t t0)
{
    struct mh__sink head;
    struct mh__json j;
    mh__sink_puts(out, "{\"format\":1,\"memhist\":\"" MH_VERSION_STRING "\",\"title\":");
    mh__sink_init_mem(&head);
    mh__json_write_escaped(&head, title);
    put_json(out, head.buf, head.len);
    mh__sink_free(&head);
    mh__sink_puts(out, ",");
    put_legend(out);
    mh__sink_puts(out, ",\"files\":[");
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = mh__view_part_json(parts[i], &len);
        if (i)
            mh__sink_puts(out, ",");
        put_json(out, s, len);
    }
    mh__sink_puts(out, "],\"ranks\":");
    mh__sink_init_mem(&head);
    mh__json_init(&j, &head, 0);
    if (rows && n > 1)
        json_ranks(&j, rows, n, t0);
    else
        mh__json_null(&j);
    put_json(out, head.buf, head.len);
    out->error = out->error ? out->error : head.error;
    mh__sink_free(&head);
    mh__sink_puts(out, "}");
}

static void put_title(struct mh__sink *out, const char *title)
{
    for (const char *c = title; *c; c++) {
        if (*c == '<')
            mh__sink_puts(out, "&lt;");
        else if (*c == '>')
            mh__sink_puts(out, "&gt;");
        else if (*c == '&')
            mh__sink_puts(out, "&amp;");
        else
            mh__sink_write(out, c, 1);
    }
}

int mh__view_write(struct mh__sink *out, const char *title, struct mh__view_part *const *parts,
                   const struct mh__rank_row *rows, size_t n, uint64_t t0_ns)
{
    mh__sink_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                       "<meta name=\"generator\" content=\"memhist " MH_VERSION_STRING "\">\n"
                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                       "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
                       "<link rel=\"icon\" href=\"data:,\">\n<title>");
    put_title(out, title);
    mh__sink_puts(out, "</title>\n<style>\n");
    mh__sink_puts(out, mh__view_css);
    mh__sink_puts(out, "</style>\n</head>\n<body>\n<div id=\"app\"><p class=\"loading\">"
                       "Loading the report…</p><noscript>This report needs JavaScript."
                       "</noscript></div>\n<script type=\"application/json\" id=\"mh-data\">");
    put_data(out, title, parts, rows, n, t0_ns);
    mh__sink_puts(out, "</script>\n<script>\n");
    mh__sink_puts(out, mh__view_js);
    mh__sink_puts(out, "</script>\n</body></html>\n");
    return out->error;
}
