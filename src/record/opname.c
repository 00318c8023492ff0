/* opname.c - names for allocations made with no Python frame on their
 * thread (autograd's device threads during backward), see torch_support.h.
 *
 * Data flow: the torch bridge's tracker cannot name anything under the
 * allocator lock; it gives the event an op token (the C++ type of the
 * autograd node the engine evaluates on that thread: a thread-local read).
 * On the drain thread the recorder's resolver calls mh__torch_op_stack,
 * which asks the bridge for the demangled type once per token, keeps only
 * what people know the op by ("torch::autograd::generated::MmBackward0" is
 * "MmBackward0", as torch's grad_fn names it) and interns the one-frame
 * stack "torch internal" / "MmBackward0". Owns the token -> stack cache of
 * the current recorder. Plain C, so it is tested without libtorch. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "memhist/recorder.h"
#include "torch_support.h"

#define OP_CACHE 512 /* distinct autograd node types of a run: a few dozen */

const char *mh__torch_op_short(const char *demangled, char *out, size_t cap)
{
    if (!out || cap == 0)
        return out;
    const char *s = demangled ? demangled : "";
    size_t end = strcspn(s, "<(");   /* template arguments, parameters */
    const char *start = s;
    for (size_t i = 0; i + 1 < end; i++)
        if (s[i] == ':' && s[i + 1] == ':')
            start = s + i + 2;
    size_t len = (size_t)(s + end - start);
    if (len == 0) { /* nothing left of the name: keep what we were given */
        start = s;
        len = strlen(s);
    }
    snprintf(out, cap, "%.*s", (int)(len < cap ? len : cap - 1), start);
    if (out[0] == '\0')
        snprintf(out, cap, "unknown op");
    return out;
}

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cache_rec; /* mh_recorder_serial of the recorder the ids belong to */
static uint64_t cache_token[OP_CACHE];
static uint32_t cache_stack[OP_CACHE];
static size_t cache_n;

static uint32_t intern_op(struct mh_recorder *rec, uint64_t token, mh__torch_op_namer name)
{
    char type[512], op[256];
    type[0] = '\0';
    name(token, type, sizeof type);
    if (type[0])
        mh__torch_op_short(type, op, sizeof op);
    else
        snprintf(op, sizeof op, "C++ code with no Python frame (--stacks all names it)");
    int64_t frame = mh_intern_frame(rec, MH__TORCH_INTERNAL_FILE, op, 0);
    uint32_t fid = frame > 0 ? (uint32_t)frame : 0;
    int64_t stack = fid ? mh_intern_stack(rec, &fid, 1) : 0;
    return stack > 0 ? (uint32_t)stack : 0;
}

uint32_t mh__torch_op_stack(struct mh_recorder *rec, uint64_t token, mh__torch_op_namer name)
{
    pthread_mutex_lock(&cache_mu);
    if (cache_rec != mh_recorder_serial(rec)) { /* a new recorder: ids of the old one mean nothing */
        cache_rec = mh_recorder_serial(rec);
        cache_n = 0;
    }
    uint32_t id = 0;
    size_t i = 0;
    while (i < cache_n && cache_token[i] != token)
        i++;
    if (i < cache_n) {
        id = cache_stack[i];
    } else {
        id = intern_op(rec, token, name);
        if (id && cache_n < OP_CACHE) {
            cache_token[cache_n] = token;
            cache_stack[cache_n++] = id;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    return id;
}
