/* flame_tree.c - the tree of a flame graph (see flame.h): nodes made along
 * paths of frame names, bytes added at the leaves and summed on the way to
 * the root, children sorted in natural order, and the folded-stack walk.
 * Owns the nodes and their names. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "grow.h"
#include "utf8.h"

struct mh__flame {
    struct mh__flame_node *nodes;
    size_t n, cap;
};

const char *mh__flame_safe_name(const char *name, char *buf, size_t len)
{
    char tmp[1024];
    if (len == 0)
        return buf;
    mh__utf8_escape(name ? name : "", name ? strlen(name) : 0, MH__UTF8_ESC_CONTROL, tmp,
                    sizeof tmp);
    size_t o = 0;
    for (const char *p = tmp; *p; p++) {
        const char *piece = *p == ';' ? "\\x3b" : NULL;
        size_t k = piece ? 4 : 1;
        if (o + k >= len)
            break;
        memcpy(buf + o, piece ? piece : p, k);
        o += k;
    }
    buf[o] = '\0';
    /* a cut may have split an escape or a multi-byte character: keep whole ones */
    mh__utf8_escape_in_place(buf, len, MH__UTF8_ESC_CONTROL);
    if (!buf[0])
        snprintf(buf, len, "<unnamed>");
    return buf;
}

static char *dup_safe(const char *s)
{
    char buf[512];
    return strdup(mh__flame_safe_name(s, buf, sizeof buf));
}

static int add_node(struct mh__flame *f, uint32_t parent, const char *name, const char *detail,
                    int kind, uint32_t *out)
{
    if (f->n >= MH__FLAME_NONE || MH__GROW(f->nodes, f->n, f->cap, 64) < 0)
        return MH_ENOMEM;
    struct mh__flame_node *nd = &f->nodes[f->n];
    memset(nd, 0, sizeof *nd);
    nd->name = dup_safe(name);
    nd->detail = detail ? dup_safe(detail) : NULL;
    if (!nd->name || (detail && !nd->detail)) {
        free((char *)nd->name);
        free((char *)nd->detail);
        return MH_ENOMEM;
    }
    nd->parent = parent;
    nd->first_child = nd->next_sibling = MH__FLAME_NONE;
    nd->kind = (uint8_t)kind;
    if (parent != MH__FLAME_NONE) {
        nd->depth = f->nodes[parent].depth + 1;
        nd->next_sibling = f->nodes[parent].first_child;
        f->nodes[parent].first_child = (uint32_t)f->n;
    }
    *out = (uint32_t)f->n++;
    return 0;
}

int mh__flame_new(const char *root_name, struct mh__flame **out)
{
    struct mh__flame *f = calloc(1, sizeof *f);
    uint32_t root;
    if (!f || add_node(f, MH__FLAME_NONE, root_name, NULL, MH__FLAME_ROOT, &root) < 0) {
        free(f);
        return MH_ENOMEM;
    }
    *out = f;
    return 0;
}

void mh__flame_free(struct mh__flame *f)
{
    for (size_t i = 0; f && i < f->n; i++) {
        free((char *)f->nodes[i].name);
        free((char *)f->nodes[i].detail);
    }
    if (f)
        free(f->nodes);
    free(f);
}

/* The child of `parent` named `name` once made safe, or MH__FLAME_NONE. */
static uint32_t find_child(const struct mh__flame *f, uint32_t parent, const char *safe)
{
    for (uint32_t c = f->nodes[parent].first_child; c != MH__FLAME_NONE;
         c = f->nodes[c].next_sibling)
        if (strcmp(f->nodes[c].name, safe) == 0)
            return c;
    return MH__FLAME_NONE;
}

int mh__flame_path(struct mh__flame *f, uint32_t parent, const char *const *names,
                   const char *const *details, size_t n, int kind, uint32_t *node)
{
    uint32_t at = parent;
    char safe[512];
    for (size_t i = 0; i < n; i++) {
        uint32_t c = find_child(f, at, mh__flame_safe_name(names[i], safe, sizeof safe));
        if (c == MH__FLAME_NONE &&
            add_node(f, at, names[i], details ? details[i] : NULL, kind, &c) < 0)
            return MH_ENOMEM;
        at = c;
    }
    *node = at;
    return 0;
}

void mh__flame_add(struct mh__flame *f, uint32_t node, uint64_t bytes, int category)
{
    int cat = category >= 0 && category < MH__CAT_COUNT ? category : MH__CAT_UNKNOWN;
    f->nodes[node].self += bytes;
    for (uint32_t at = node; at != MH__FLAME_NONE; at = f->nodes[at].parent) {
        f->nodes[at].bytes += bytes;
        f->nodes[at].count++;
        f->nodes[at].by_category[cat] += bytes;
    }
}

/* Natural order: runs of digits compare by value ("h.2" < "h.10"), the
 * rest byte by byte; equal values with different leading zeros by bytes. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            const char *za = a, *zb = b;
            while (*za == '0')
                za++;
            while (*zb == '0')
                zb++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)za[la]))
                la++;
            while (isdigit((unsigned char)zb[lb]))
                lb++;
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = memcmp(za, zb, la);
            if (c)
                return c;
            a = za + la;
            b = zb + lb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

static const struct mh__flame *sort_tree;

static int by_name(const void *x, const void *y)
{
    const struct mh__flame_node *a = &sort_tree->nodes[*(const uint32_t *)x];
    const struct mh__flame_node *b = &sort_tree->nodes[*(const uint32_t *)y];
    int c = natural_cmp(a->name, b->name);
    return c ? c : strcmp(a->name, b->name);
}

void mh__flame_finish(struct mh__flame *f)
{
    uint32_t *kids = malloc((f->n ? f->n : 1) * sizeof *kids);
    if (!kids)
        return; /* children stay in the order they were made */
    sort_tree = f;
    for (size_t i = 0; i < f->n; i++) {
        size_t k = 0;
        for (uint32_t c = f->nodes[i].first_child; c != MH__FLAME_NONE; c = f->nodes[c].next_sibling)
            kids[k++] = c;
        if (k < 2)
            continue;
        qsort(kids, k, sizeof *kids, by_name);
        f->nodes[i].first_child = kids[0];
        for (size_t j = 0; j < k; j++)
            f->nodes[kids[j]].next_sibling = j + 1 < k ? kids[j + 1] : MH__FLAME_NONE;
    }
    free(kids);
}

const struct mh__flame_node *mh__flame_nodes(const struct mh__flame *f, size_t *n)
{
    *n = f->n;
    return f->nodes;
}

int mh__flame_main_category(const struct mh__flame_node *node)
{
    int best = MH__CAT_UNKNOWN;
    uint64_t most = 0;
    for (int c = 0; c < MH__CAT_COUNT; c++)
        if (node->by_category[c] > most) {
            most = node->by_category[c];
            best = c;
        }
    return best;
}

/* ---- folded stacks ------------------------------------------------------------ */
struct fold {
    const struct mh__flame *f;
    char *buf;
    size_t len, cap;
    int (*fn)(void *, const char *, uint64_t);
    void *user;
};

static int fold_node(struct fold *w, uint32_t node)
{
    const struct mh__flame_node *nd = &w->f->nodes[node];
    size_t keep = w->len;
    if (node != 0) {
        size_t k = strlen(nd->name) + 1;
        while (w->len + k + 1 > w->cap) {
            size_t nc = w->cap ? w->cap * 2 : 1024;
            char *p = realloc(w->buf, nc);
            if (!p)
                return MH_ENOMEM;
            w->buf = p;
            w->cap = nc;
        }
        if (w->len)
            w->buf[w->len++] = ';';
        memcpy(w->buf + w->len, nd->name, k);
        w->len += k - 1;
    }
    int rc = 0;
    if (node != 0 && nd->self)
        rc = w->fn(w->user, w->buf, nd->self);
    for (uint32_t c = nd->first_child; c != MH__FLAME_NONE && rc == 0;
         c = w->f->nodes[c].next_sibling)
        rc = fold_node(w, c);
    w->len = keep;
    if (w->buf)
        w->buf[keep] = '\0';
    return rc;
}

int mh__flame_fold(const struct mh__flame *f,
                   int (*fn)(void *user, const char *stack, uint64_t bytes), void *user)
{
    struct fold w = {f, NULL, 0, 0, fn, user};
    int rc = fold_node(&w, 0);
    free(w.buf);
    return rc;
}
