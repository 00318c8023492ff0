/* layer_names.c - layer names (rules in layers.h): a module path cut at
 * its first index or numbered block kept as an attribute, else at its first
 * module that holds others beside a sibling; else the user-code
 * `Class.forward` frames of the stack; else the stack's most informative
 * frame. The namer keeps the sorted module paths of the allocations (and
 * the block of each) to find siblings and what lies below a module. */
#include "layer_names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "addrmap.h"
#include "stacks.h"
#include "utf8.h"

int mh__is_module_path(const char *s)
{
    if (!s || !*s || *s == '.')
        return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (*p == '.' && (p[1] == '.' || p[1] == '\0'))
            return 0;
        if (c <= ' ' || c == 0x7f || strchr(":/\\<>()[]{}\"'", c))
            return 0;
    }
    return 1;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void mh__layer_namer_init(struct mh__layer_namer *nm, const struct mh_reader *r)
{
    *nm = (struct mh__layer_namer){.r = r};
}

int mh__layer_namer_add(struct mh__layer_namer *nm, uint32_t str)
{
    if (!str || mh__addrmap_get(&nm->seen, str))
        return 0;
    if (mh__addrmap_put(&nm->seen, str, (void *)1) < 0)
        return MH_ENOMEM;
    const char *path = mh_reader_string(nm->r, str);
    if (!mh__is_module_path(path))
        return 0;
    if (nm->npaths == nm->cap) {
        size_t cap = nm->cap ? 2 * nm->cap : 64;
        const char **p = realloc(nm->paths, cap * sizeof *p);
        if (!p)
            return MH_ENOMEM;
        nm->paths = p;
        nm->cap = cap;
    }
    nm->paths[nm->npaths++] = path;
    return 0;
}

static size_t block_length(const struct mh__layer_namer *nm, const char *path);

int mh__layer_namer_ready(struct mh__layer_namer *nm)
{
    mh__addrmap_destroy(&nm->seen);
    if (nm->npaths)
        qsort(nm->paths, nm->npaths, sizeof *nm->paths, by_string);
    nm->block = malloc((nm->npaths ? nm->npaths : 1) * sizeof *nm->block);
    if (!nm->block)
        return MH_ENOMEM;
    for (size_t i = 0; i < nm->npaths; i++)
        nm->block[i] = block_length(nm, nm->paths[i]);
    return 0;
}

void mh__layer_namer_free(struct mh__layer_namer *nm)
{
    mh__addrmap_destroy(&nm->seen);
    free(nm->paths);
    free(nm->block);
    *nm = (struct mh__layer_namer){.r = nm->r};
}

/* Index of the first module path not below s[0..n) followed by `after`
 * (0: s[0..n) alone) in sorted order. */
static size_t lower_bound(const struct mh__layer_namer *nm, const char *s, size_t n, char after)
{
    size_t lo = 0, hi = nm->npaths;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(nm->paths[mid], s, n);
        if (c == 0 && after)
            c = (unsigned char)nm->paths[mid][n] - (unsigned char)after;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether the component path[at..at+n), whose name has its first digit at
 * at+stem, has a sibling of the same stem that holds modules ("block1" and
 * "block2", "inception3a" and "inception4b"). */
static int has_numbered_sibling(const struct mh__layer_namer *nm, const char *path, size_t at,
                                size_t n, size_t stem)
{
    for (size_t i = lower_bound(nm, path, at + stem, 0); i < nm->npaths; i++) {
        const char *other = nm->paths[i];
        if (strncmp(other, path, at + stem) != 0)
            break;
        size_t len = strcspn(other + at, ".");
        if (isdigit((unsigned char)other[at + stem]) && other[at + len] == '.' &&
            (len != n || strncmp(other + at, path + at, n) != 0))
            return 1;
    }
    return 0;
}

/* Whether s[0..n) is a non-empty run of digits. */
static int is_index(const char *s, size_t n)
{
    return n > 0 && strspn(s, "0123456789") >= n;
}

/* Length of a module path up to its first component that is an index (all
 * digits: the entry of a ModuleList or Sequential) or a numbered block kept
 * as an attribute (a name with a digit that holds modules and has a
 * sibling of the same stem, "block2" of "block2.mlp.fc", "inception3a"; not
 * a Sequential of blocks such as ResNet's "layer1", whose index follows);
 * 0 if it has neither. */
static size_t block_length(const struct mh__layer_namer *nm, const char *path)
{
    for (size_t at = 0;;) {
        size_t n = strcspn(path + at, "."), stem = 0;
        while (stem < n && !isdigit((unsigned char)path[at + stem]))
            stem++;
        if (is_index(path + at, n))
            return at + n;
        if (!path[at + n])
            return 0;
        const char *next = path + at + n + 1;
        if (stem > 0 && stem < n && !is_index(next, strcspn(next, ".")) &&
            has_numbered_sibling(nm, path, at, n, stem))
            return at + n;
        at += n + 1;
    }
}

/* Whether a block (block_length) lies below module path[0..n). */
static int above_a_block(const struct mh__layer_namer *nm, const char *path, size_t n)
{
    for (size_t i = lower_bound(nm, path, n, '.'); i < nm->npaths; i++) {
        if (strncmp(nm->paths[i], path, n) != 0 || nm->paths[i][n] != '.')
            break;
        if (nm->block[i] > n)
            return 1;
    }
    return 0;
}

/* Whether the module path[0..n), whose name starts at path[at], has a
 * sibling: another module path under the same parent. */
static int has_sibling(const struct mh__layer_namer *nm, const char *path, size_t at, size_t n)
{
    for (size_t i = lower_bound(nm, path, at, 0); i < nm->npaths; i++) {
        const char *other = nm->paths[i];
        if (strncmp(other, path, at) != 0)
            break;
        if (strcspn(other + at, ".") != n - at || strncmp(other + at, path + at, n - at) != 0)
            return 1;
    }
    return 0;
}

/* Length of the layer's part of a module path: up to its block; else up to
 * its first module that holds others, has a sibling and no block below it
 * (BERT's "bert.embeddings", a module called several times as "shared";
 * not a model's wrapper with nothing beside it); else the whole path (a
 * leaf beside blocks: "transformer.ln_f", "lm_head"). Without the
 * recording's paths, blocks that are indices only. */
static size_t layer_length(const struct mh__layer_namer *nm, const char *path)
{
    size_t cut = block_length(nm, path);
    if (cut || !nm->block)
        return cut ? cut : strlen(path);
    size_t at = 0;
    for (const char *dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.')) {
        size_t n = (size_t)(dot - path);
        if (!above_a_block(nm, path, n) && has_sibling(nm, path, at, n))
            return n;
        at = n + 1;
    }
    return strlen(path);
}

/* Class of a user-code "Class.forward" frame, or 0. */
static int forward_class(const struct mh_reader *r, uint32_t frame, char *cls, size_t len)
{
    struct mh_frame f;
    if (mh_reader_frame(r, frame, &f) != 0 || !f.func || !f.file)
        return 0;
    if (mh__frame_is_internal(f.file, f.func))
        return 0;
    size_t n = strlen(f.func);
    if (n <= 8 || strcmp(f.func + n - 8, ".forward") != 0)
        return 0;
    snprintf(cls, len, "%.*s", (int)(n - 8), f.func);
    return 1;
}

static int layer_from_stack(const struct mh_reader *r, uint32_t stack, char *buf, size_t len)
{
    const uint32_t *frames;
    size_t n;
    char outer[128] = "", child[128] = "", cls[128];
    if (!stack || mh_reader_stack(r, stack, &frames, &n) != 0)
        return 0;
    for (size_t i = n; i-- > 0;) { /* outermost first */
        if (!forward_class(r, frames[i], cls, sizeof cls))
            continue;
        if (!outer[0])
            snprintf(outer, sizeof outer, "%s", cls);
        else if (!child[0])
            snprintf(child, sizeof child, "%s", cls);
    }
    if (!outer[0])
        return 0;
    if (child[0])
        snprintf(buf, len, "%s.%s", outer, child);
    else
        snprintf(buf, len, "%s", outer);
    return 1;
}

const char *mh__role_layer(int role)
{
    switch (role) {
    case MH_ROLE_PARAMETER: return "parameters";
    case MH_ROLE_BUFFER: return "buffers";
    case MH_ROLE_GRADIENT: return "gradients";
    case MH_ROLE_OPTIMIZER_STATE: return "optimizer state";
    default: return NULL;
    }
}

const char *mh__layer_name(const struct mh__layer_namer *nm, uint32_t str, uint32_t stack,
                           int role, char *buf, size_t len)
{
    const char *meta = str ? mh_reader_string(nm->r, str) : NULL;
    const char *by_role = mh__role_layer(role);
    if (mh__is_module_path(meta))
        snprintf(buf, len, "%.*s", (int)layer_length(nm, meta), meta);
    else if (by_role)
        snprintf(buf, len, "%s", by_role);
    else if (!layer_from_stack(nm->r, stack, buf, len))
        mh__stack_label(nm->r, stack, buf, len);
    return mh__utf8_escape_in_place(buf, len, MH__UTF8_ESC_CONTROL);
}
