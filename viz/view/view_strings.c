/* view_strings.c - the string table of `memhist view`'s JSON: every module
 * name, frame, file and label is written once and referred to by its index,
 * which keeps a page of many trees and events small. Also names stacks by
 * their label (stacks.h) once per stack, and writes a stack's frames with
 * package-relative paths for display and the full path for hover. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "stacks.h"
#include "view_int.h"

void mh__vstr_init(struct mh__vstr *s)
{
    memset(s, 0, sizeof *s);
}

void mh__vstr_free(struct mh__vstr *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->text[i]);
    free(s->text);
    free(s->slot);
    free(s->stack_label);
    memset(s, 0, sizeof *s);
}

static uint64_t hash(const char *t)
{
    uint64_t h = 1469598103934665603ull;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ull;
    return h;
}

static int rehash(struct mh__vstr *s)
{
    size_t n = s->nslot ? s->nslot * 2 : 1024;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (!slot)
        return MH_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        size_t k = hash(s->text[i]) & (n - 1);
        while (slot[k])
            k = (k + 1) & (n - 1);
        slot[k] = (uint32_t)i + 1;
    }
    free(s->slot);
    s->slot = slot;
    s->nslot = n;
    return 0;
}

uint32_t mh__vstr_id(struct mh__vstr *s, const char *text)
{
    text = text ? text : "";
    if ((s->n + 1) * 2 > s->nslot && rehash(s) < 0) {
        s->error = MH_ENOMEM;
        return 0;
    }
    size_t k = hash(text) & (s->nslot - 1);
    for (; s->slot[k]; k = (k + 1) & (s->nslot - 1))
        if (strcmp(s->text[s->slot[k] - 1], text) == 0)
            return s->slot[k] - 1;
    char *copy = strdup(text);
    if (!copy || MH__GROW(s->text, s->n, s->cap, 256) < 0) {
        free(copy);
        s->error = MH_ENOMEM;
        return 0;
    }
    s->text[s->n] = copy;
    s->slot[k] = (uint32_t)++s->n;
    return (uint32_t)s->n - 1;
}

uint32_t mh__vstr_stack(struct mh__vstr *s, const struct mh_reader *r, uint32_t stack)
{
    if (stack >= s->nstack) {
        size_t n = s->nstack ? s->nstack : 1024;
        while (n <= stack)
            n *= 2;
        uint32_t *q = realloc(s->stack_label, n * sizeof *q);
        if (!q) {
            s->error = MH_ENOMEM;
            return 0;
        }
        memset(q + s->nstack, 0, (n - s->nstack) * sizeof *q);
        s->stack_label = q;
        s->nstack = n;
    }
    if (!s->stack_label[stack]) {
        char label[512];
        s->stack_label[stack] = mh__vstr_id(s, mh__stack_label(r, stack, label, sizeof label)) + 1;
    }
    return s->stack_label[stack] - 1;
}

void mh__vstr_json(const struct mh__vstr *s, struct mh__json *j)
{
    mh__json_begin_array(j);
    for (size_t i = 0; i < s->n; i++)
        mh__json_string(j, s->text[i]);
    mh__json_end_array(j);
}

void mh__vstr_frames(struct mh__vstr *s, struct mh__json *j, const struct mh_reader *r,
                     uint32_t stack)
{
    const uint32_t *frames;
    size_t n = 0;
    mh__json_begin_array(j);
    if (stack && mh_reader_stack(r, stack, &frames, &n) == 0)
        for (size_t i = 0; i < n; i++) {
            struct mh_frame f;
            if (mh_reader_frame(r, frames[i], &f) != 0)
                continue;
            mh__json_begin_array(j);
            mh__json_uint(j, mh__vstr_id(s, mh__display_path(r, f.file ? f.file : "")));
            mh__json_uint(j, f.line);
            mh__json_uint(j, mh__vstr_id(s, f.func));
            mh__json_uint(j, mh__vstr_id(s, f.file));
            mh__json_end_array(j);
        }
    mh__json_end_array(j);
}
