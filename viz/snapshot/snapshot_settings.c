/* snapshot_settings.c - snapshot export: writes the allocator settings an
 * imported snapshot had (meta "torch_allocator_settings", one line per value
 * "T<TAB>KEY<TAB>VALUE" as src/import/snapshot_isettings.c wrote them, see
 * src/format/FORMAT.md) back into the `allocator_settings` dict with the same
 * keys, order and value types. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pickle_write.h"
#include "snapshot_int.h"

/* Writes one value of type t. */
static void value(struct mh__pw *w, char t, const char *v)
{
    switch (t) {
    case 's': mh__pw_cstr(w, v); break;
    case 'b': mh__pw_bool(w, v[0] == '1'); break;
    case 'i': mh__pw_int(w, strtoll(v, NULL, 10)); break;
    case 'f': mh__pw_float(w, strtod(v, NULL)); break;
    default: mh__pw_none(w); break;
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

int mh__snapshot_settings_write(struct mh__pw *w, const char *text,
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
            mh__pw_setitems(w);
            in_dict = 0;
        }
        if (slash) {
            if (!in_dict)
                continue; /* an item without its dict line */
            mh__pw_cstr(w, slash + 1);
            value(w, t, val);
            continue;
        }
        if (skip && skip(user, key))
            continue;
        mh__pw_cstr(w, key);
        n++;
        if (t == 'D') {
            mh__pw_empty_dict(w);
            mh__pw_mark(w);
            in_dict = 1;
        } else {
            value(w, t, val);
        }
    }
    if (in_dict)
        mh__pw_setitems(w);
    free(copy);
    return n;
}
