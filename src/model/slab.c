/* slab.c - fixed-size object free lists for the model's blocks and segments.
 * Objects are carved from 256-object chunks and recycled, so a long replay
 * allocates only as much as its largest live state needs. Owns the chunks. */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

#define SLAB_CHUNK 256

static int add_chunk(struct mh__slab *s)
{
    if (s->nchunks == s->capchunks) {
        size_t cap = s->capchunks ? s->capchunks * 2 : 16;
        void **c = realloc(s->chunks, cap * sizeof *c);
        if (!c)
            return -1;
        s->chunks = c;
        s->capchunks = cap;
    }
    char *chunk = malloc(s->objsize * SLAB_CHUNK);
    if (!chunk)
        return -1;
    s->chunks[s->nchunks++] = chunk;
    for (size_t i = SLAB_CHUNK; i-- > 0;)
        mh__mslab_put(s, chunk + i * s->objsize);
    return 0;
}

/* Returns a zeroed object, or NULL when memory runs out. */
void *mh__mslab_get(struct mh__slab *s)
{
    if (!s->free_list && add_chunk(s))
        return NULL;
    void *p = s->free_list;
    memcpy(&s->free_list, p, sizeof(void *));
    memset(p, 0, s->objsize);
    return p;
}

void mh__mslab_put(struct mh__slab *s, void *p)
{
    memcpy(p, &s->free_list, sizeof(void *));
    s->free_list = p;
}

void mh__mslab_destroy(struct mh__slab *s)
{
    for (size_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    s->chunks = NULL;
    s->free_list = NULL;
    s->nchunks = s->capchunks = 0;
}
