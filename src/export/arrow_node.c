/* arrow_node.c - owning ArrowArray and ArrowSchema nodes (see arrow_node.h). */
#include <stdlib.h>
#include <string.h>

#include "arrow_node.h"
#include "memhist/error.h"

#define MAX_BUFS 3

struct array_node {
    void *owned[MAX_BUFS];
    const void *bufs[MAX_BUFS];
    struct ArrowArray **kidp;
    struct ArrowArray *kids;
    struct ArrowArray dict;
};

static void array_release(struct ArrowArray *a)
{
    struct array_node *n = a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (n->kids[i].release)
            n->kids[i].release(&n->kids[i]);
    if (n->dict.release)
        n->dict.release(&n->dict);
    for (int i = 0; i < MAX_BUFS; i++)
        free(n->owned[i]);
    free(n->kids);
    free(n->kidp);
    free(n);
    a->release = NULL;
}

int mh__array_init(struct ArrowArray *a, int64_t length, int64_t nulls, int nbufs, void **bufs,
                   int nkids, int dict)
{
    memset(a, 0, sizeof *a);
    struct array_node *n = calloc(1, sizeof *n);
    if (n && nkids) {
        n->kids = calloc((size_t)nkids, sizeof *n->kids);
        n->kidp = calloc((size_t)nkids, sizeof *n->kidp);
    }
    if (!n || (nkids && (!n->kids || !n->kidp))) {
        for (int i = 0; i < nbufs; i++)
            free(bufs[i]);
        if (n) {
            free(n->kids);
            free(n->kidp);
        }
        free(n);
        return MH_ENOMEM;
    }
    for (int i = 0; i < nbufs && i < MAX_BUFS; i++)
        n->owned[i] = bufs[i], n->bufs[i] = bufs[i];
    for (int i = 0; i < nkids; i++)
        n->kidp[i] = &n->kids[i];
    a->length = length;
    a->null_count = nulls;
    a->n_buffers = nbufs;
    a->buffers = n->bufs;
    a->n_children = nkids;
    a->children = nkids ? n->kidp : NULL;
    a->dictionary = dict ? &n->dict : NULL;
    a->release = array_release;
    a->private_data = n;
    return 0;
}

struct schema_node {
    char *meta;
    struct ArrowSchema **kidp;
    struct ArrowSchema *kids;
    struct ArrowSchema dict;
};

static void schema_release(struct ArrowSchema *s)
{
    struct schema_node *n = s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (n->kids[i].release)
            n->kids[i].release(&n->kids[i]);
    if (n->dict.release)
        n->dict.release(&n->dict);
    free(n->meta);
    free(n->kids);
    free(n->kidp);
    free(n);
    s->release = NULL;
}

int mh__schema_init(struct ArrowSchema *s, const char *format, const char *name, int64_t flags,
                    int nkids, int dict, const char *meta, size_t meta_len)
{
    memset(s, 0, sizeof *s);
    struct schema_node *n = calloc(1, sizeof *n);
    if (n && nkids) {
        n->kids = calloc((size_t)nkids, sizeof *n->kids);
        n->kidp = calloc((size_t)nkids, sizeof *n->kidp);
    }
    if (n && meta && (n->meta = malloc(meta_len)))
        memcpy(n->meta, meta, meta_len);
    if (!n || (nkids && (!n->kids || !n->kidp)) || (meta && !n->meta)) {
        if (n) {
            free(n->kids);
            free(n->kidp);
            free(n->meta);
        }
        free(n);
        return MH_ENOMEM;
    }
    for (int i = 0; i < nkids; i++)
        n->kidp[i] = &n->kids[i];
    s->format = format;
    s->name = name;
    s->metadata = n->meta;
    s->flags = flags;
    s->n_children = nkids;
    s->children = nkids ? n->kidp : NULL;
    s->dictionary = dict ? &n->dict : NULL;
    s->release = schema_release;
    s->private_data = n;
    return 0;
}
