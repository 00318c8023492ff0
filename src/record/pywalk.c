/* pywalk.c - walks the calling thread's own CPython frames on the
 * allocation path, reading (code object, instruction offset) pairs with the
 * field offsets of pylayout.c.
 *
 * Called from the allocator hook, with or without the GIL: only the owning
 * thread pushes and pops its frames, so while it runs this C code its chain
 * is frozen, and every frame keeps its code object alive. No Python API is
 * called except PyGILState_GetThisThreadState (a thread-local read) and the
 * finalization flag; nothing is allocated or reference-counted. */
#include "pystack.h"

#define LOADP(base, off) (*(const char *const *)((base) + (off)))

/* Frame owners: 3 marks the eval loop's entry shim on 3.12 and later (named
 * CSTACK up to 3.13, INTERPRETER on 3.14, where 4 is never assigned). */
enum { OWNED_BY_GENERATOR = 1, OWNED_BY_ENTRY_SHIM = 3 };

/* The code object of a frame: from 3.14 f_executable is a stack reference
 * whose low bits tag its reference kind; objects are 8-byte aligned, so
 * clearing them is right on every version. */
static const char *frame_code(const struct mh__pylayout *l, const char *f)
{
    return (const char *)((uintptr_t)LOADP(f, l->fr_code) & ~(uintptr_t)3);
}

static const char *innermost(const struct mh__pylayout *l, const char *ts)
{
    if (l->ts_cframe) {
        const char *cf = LOADP(ts, l->ts_cframe);
        return cf ? LOADP(cf, l->ts_frame) : NULL;
    }
    return LOADP(ts, l->ts_frame);
}

/* 3.10: every frame is a PyFrameObject; f_lasti counts code units. */
static int walk310(const struct mh__python *py, const char *f, struct mh__pyframe *out, int max)
{
    const struct mh__pylayout *l = py->layout;
    int n = 0;
    for (; f && n < max; f = LOADP(f, l->fr_back)) {
        const char *code = LOADP(f, l->fr_code);
        if (!code)
            continue;
        int lasti = *(const int *)(f + l->fr_instr);
        out[n].code = code;
        out[n].offset = lasti < 0 ? -1 : 2 * lasti;
        out[n].entry_end = 1;
        n++;
    }
    return n;
}

/* 3.11+: _PyInterpreterFrame chain; skips C-stack shims and frames that
 * have not started (CPython's _PyFrame_IsIncomplete). */
static int walk311(const struct mh__python *py, const char *f, struct mh__pyframe *out, int max)
{
    const struct mh__pylayout *l = py->layout;
    int n = 0;
    for (; f && n < max; f = LOADP(f, l->fr_back)) {
        uint8_t owner = *(const uint8_t *)(f + l->fr_owner);
        if (l->minor >= 12 && owner >= OWNED_BY_ENTRY_SHIM) {
            if (n)
                out[n - 1].entry_end = 1;
            continue;
        }
        const char *code = frame_code(l, f);
        if (!code || LOADP(code, 8) != (const char *)py->code_type)
            continue;
        const char *instr = LOADP(f, l->fr_instr);
        long off = (long)(instr - (code + l->co_adaptive));
        int first_traceable = *(const int *)(code + l->co_firsttraceable);
        if (owner != OWNED_BY_GENERATOR && off < 2L * first_traceable)
            continue;
        out[n].code = code;
        out[n].offset = off < 0 ? -1 : (int32_t)off;
        out[n].entry_end = l->minor == 11 ? *(const uint8_t *)(f + l->fr_is_entry) : 0;
        n++;
    }
    return n;
}

int mh__pywalk(const struct mh__python *py, struct mh__pyframe *out, int max)
{
    const struct mh__pylayout *l = py->layout;
    if (!l || max <= 0 || py->is_finalizing())
        return 0;
    const char *ts = py->this_tstate();
    if (!ts)
        return 0;
    const char *f = innermost(l, ts);
    return l->minor == 10 ? walk310(py, f, out, max) : walk311(py, f, out, max);
}
