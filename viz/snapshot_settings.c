/* snapshot_settings.c - a snapshot's `allocator_settings` dict kept as text:
 * snapshot import stores it in the meta "torch_allocator_settings" and
 * snapshot export writes it back with the same keys, order and value types
 * (src/format/FORMAT.md). One line per value, "T<TAB>KEY<TAB>VALUE", T one of
 * s (str), i (int), f (float), b (bool), n (None), D (a dict: its items follow
 * as lines with KEY "dict/sub"). Values of other types, and keys or strings
 * holding tabs or newlines, are left out. */
#include "viz/snapshot_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"

#define MAX_TEXT 65536

static int clean(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\t' || s[i] == '\n' || s[i] == '\0')
            return 0;
    return 1;
}

/* Appends one line; 0 if the value has no supported type. */
static int line(char *out, size_t cap, size_t *used, const char *prefix, const struct mh_pv *k,
                const struct mh_pv *v)
{
    char val[512];
    char t;
    int64_t i;
    double f;
    int b;
    if (!k || k->type != MH_PV_STR || !clean(k->u.s, k->n))
        return 0;
    val[0] = '\0';
    if (v->type == MH_PV_STR && v->n < sizeof val && clean(v->u.s, v->n)) {
        t = 's';
        memcpy(val, v->u.s, v->n);
        val[v->n] = '\0';
    } else if (v->type == MH_PV_BOOL && mh_pv_bool(v, &b) == 0) {
        t = 'b';
        snprintf(val, sizeof val, "%d", b);
    } else if (v->type == MH_PV_INT && mh_pv_i64(v, &i) == 0) {
        t = 'i';
        snprintf(val, sizeof val, "%lld", (long long)i);
    } else if (v->type == MH_PV_FLOAT && mh_pv_f64(v, &f) == 0) {
        t = 'f';
        snprintf(val, sizeof val, "%.17g", f);
    } else if (v->type == MH_PV_NONE) {
        t = 'n';
    } else if (v->type == MH_PV_DICT && !prefix) {
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

int mh_snapshot_settings_text(const struct mh_pv *dict, char **out)
{
    *out = NULL;
    if (!dict || dict->type != MH_PV_DICT)
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

/* Writes one value of type t. */
static void value(struct mh_pw *w, char t, const char *v)
{
    switch (t) {
    case 's': mh_pw_cstr(w, v); break;
    case 'b': mh_pw_bool(w, v[0] == '1'); break;
    case 'i': mh_pw_int(w, strtoll(v, NULL, 10)); break;
    case 'f': mh_pw_float(w, strtod(v, NULL)); break;
    default: mh_pw_none(w); break;
    }
}

/* Splits "T\tKEY\tVALUE" in place; 0 if malformed. */
static int split(char *l, char *t, char **key, char **val)
{
    char *a = strchr(l, '\t');
    char *b = a ? strchr(a + 1, '\t') : NULL;
    if (!a || !b || a != l + 1)
        return 0;
    *t = l[0];
    *a = *b = '\0';
    *key = a + 1;
    *val = b + 1;
    return 1;
}

int mh_snapshot_settings_write(struct mh_pw *w, const char *text,
                               int (*skip)(void *user, const char *key), void *user)
{
    char *copy = strdup(text ? text : "");
    if (!copy)
        return MH_ENOMEM;
    int in_dict = 0, n = 0;
    char *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char t, *key, *val;
        if (!split(l, &t, &key, &val))
            continue;
        char *slash = strchr(key, '/');
        if (in_dict && !slash) {
            mh_pw_setitems(w);
            in_dict = 0;
        }
        if (slash) {
            if (!in_dict)
                continue; /* an item without its dict line */
            mh_pw_cstr(w, slash + 1);
            value(w, t, val);
            continue;
        }
        if (skip && skip(user, key))
            continue;
        mh_pw_cstr(w, key);
        n++;
        if (t == 'D') {
            mh_pw_empty_dict(w);
            mh_pw_mark(w);
            in_dict = 1;
        } else {
            value(w, t, val);
        }
    }
    if (in_dict)
        mh_pw_setitems(w);
    free(copy);
    return n;
}
