/* scopes.c - module scopes per thread (MH_EV_SCOPE_ENTER/EXIT, written by the
 * torch module hooks), so the model can say which module was active on a
 * thread when an allocation happened. Part of the model's replay: an
 * allocation without user metadata takes the innermost scope of its thread
 * as its `str` (mh_block_view.str, and what the analyses read through
 * mh_model_scope()). An exit pops its own entry and everything entered after
 * it; an exit that matches nothing is ignored, so a recording cut in the
 * middle of a module or a hook that never ran does not derail later scopes. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "model_int.h"

#define MH__SCOPE_THREADS 64
#define MH__SCOPE_DEPTH 256

struct mh__scope_thread {
    uint32_t thread;
    uint32_t depth;
    uint32_t names[MH__SCOPE_DEPTH];
};

struct mh__scopes {
    struct mh__scope_thread t[MH__SCOPE_THREADS];
    size_t n;
};

void mh__scopes_free(struct mh__scopes *s)
{
    free(s);
}

static struct mh__scope_thread *thread_find(const struct mh__scopes *s, uint32_t thread)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (s->t[i].thread == thread)
            return (struct mh__scope_thread *)&s->t[i];
    return NULL;
}

static struct mh__scope_thread *thread_get(struct mh__scopes *s, uint32_t thread)
{
    struct mh__scope_thread *t = thread_find(s, thread);
    if (t)
        return t;
    for (size_t i = 0; i < s->n; i++) /* reuse a thread slot whose scopes all closed */
        if (s->t[i].depth == 0) {
            s->t[i].thread = thread;
            return &s->t[i];
        }
    if (s->n == MH__SCOPE_THREADS)
        return NULL;
    t = &s->t[s->n++];
    t->thread = thread;
    t->depth = 0;
    return t;
}

int mh__scopes_apply(struct mh_model *m, const struct mh_event *ev)
{
    if (!m->scopes && !(m->scopes = calloc(1, sizeof *m->scopes)))
        return MH_ENOMEM;
    struct mh__scope_thread *t = thread_get(m->scopes, ev->thread);
    if (!t) /* more threads with open scopes than slots: ignore this one */
        return 0;
    if (ev->kind == MH_EV_SCOPE_ENTER) {
        if (t->depth < MH__SCOPE_DEPTH)
            t->names[t->depth] = ev->str;
        t->depth++;
        return 0;
    }
    uint32_t top = t->depth < MH__SCOPE_DEPTH ? t->depth : MH__SCOPE_DEPTH;
    if (t->depth > top) { /* deeper than kept: just count down */
        t->depth--;
        return 0;
    }
    for (uint32_t i = top; i-- > 0;)
        if (t->names[i] == ev->str) {
            t->depth = i;
            break;
        }
    return 0;
}

uint32_t mh_model_scope(const struct mh_model *m, uint32_t thread)
{
    const struct mh__scope_thread *t = m ? thread_find(m->scopes, thread) : NULL;
    if (!t || t->depth == 0)
        return 0;
    return t->names[(t->depth < MH__SCOPE_DEPTH ? t->depth : MH__SCOPE_DEPTH) - 1];
}
