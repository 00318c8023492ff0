/* snapshot_isettings.c - snapshot import: a snapshot's `allocator_settings`
 * dict as the text of the meta "torch_allocator_settings", which snapshot
 * export (viz/snapshot/snapshot_settings.c) writes back with the same keys,
 * order and value types (src/format/FORMAT.md). One line per value,
 * "T<TAB>KEY<TAB>VALUE", T one of s (str), i (int), f (float), b (bool), n
 * (None), D (a dict: its items follow as lines with KEY "dict/sub"). Values
 * of other types, and keys or strings holding tabs or newlines, are left
 * out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "snapshot_import_int.h"

#define MAX_TEXT 65536

static int clean(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\t' || s[i] == '\n' || s[i] == '\0')
            return 0;
    return 1;
}

/* Appends one line; 0 if the value has no supported type. */
static int line(char *out, size_t cap, size_t *used, const char *prefix, const struct mh__pv *k,
                const struct mh__pv *v)
{
    char val[512];
    char t;
    int64_t i;
    double f;
    int b;
    if (!k || k->type != MH__PV_STR || !clean(k->u.s, k->n))
        return 0;
    val[0] = '\0';
    if (v->type == MH__PV_STR && v->n < sizeof val && clean(v->u.s, v->n)) {
        t = 's';
        memcpy(val, v->u.s, v->n);
        val[v->n] = '\0';
    } else if (v->type == MH__PV_BOOL && mh__pv_bool(v, &b) == 0) {
        t = 'b';
        snprintf(val, sizeof val, "%d", b);
    } else if (v->type == MH__PV_INT && mh__pv_i64(v, &i) == 0) {
        t = 'i';
        snprintf(val, sizeof val, "%lld", (long long)i);
    } else if (v->type == MH__PV_FLOAT && mh__pv_f64(v, &f) == 0) {
        t = 'f';
        snprintf(val, sizeof val, "%.17g", f);
    } else if (v->type == MH__PV_NONE) {
        t = 'n';
    } else if (v->type == MH__PV_DICT && !prefix) {
        t = 'D';
    } else {
        return 0;
    }
    int w = snprintf(out + *used, cap - *used, "%c\t%s%s%.*s\t%s\n", t, prefix ? prefix : "",
                     prefix ? "/" : "", (int)k->n, k->u.s, val);
    if (w < 0 || (size_t)w >= cap - *used)
        return MH_ELIMIT;
    *used += (size_t)w;
    if (t != 'D')
        return 0;
    char sub[256];
    if (k->n >= sizeof sub)
        return MH_ELIMIT;
    memcpy(sub, k->u.s, k->n);
    sub[k->n] = '\0';
    for (uint32_t j = 0; j < v->n; j++) {
        int rc = line(out, cap, used, sub, v->u.items[2 * j], v->u.items[2 * j + 1]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int mh__imp_settings_text(const struct mh__pv *dict, char **out)
{
    *out = NULL;
    if (!dict || dict->type != MH__PV_DICT)
        return 0;
    char *buf = malloc(MAX_TEXT);
    if (!buf)
        return MH_ENOMEM;
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < dict->n; i++) {
        int rc = line(buf, MAX_TEXT, &used, NULL, dict->u.items[2 * i], dict->u.items[2 * i + 1]);
        if (rc < 0) {
            free(buf);
            return rc;
        }
    }
    *out = buf;
    return 0;
}
