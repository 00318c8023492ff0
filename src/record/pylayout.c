/* pylayout.c - which CPython runs in this process and where its frame,
 * code and string fields are, per minor version, plus the start-up check
 * that compares a walk through these offsets with CPython's public API.
 *
 * Sits under pywalk.c and pycode.c (they read objects with these offsets)
 * and is used once by stackcap.c at attach time. libmemhist does not link
 * libpython: every CPython function is found with dlsym in the process, so
 * a program without Python simply has no Python frames. Offsets were taken
 * with offsetof against each version's headers (Py_BUILD_CORE, x86-64). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "pystack.h"

static const struct mh__pylayout layouts[] = {
    /* minor cframe frame  code back instr owner entry  file name ltab first trace adapt  ascii
       compact */
    {10, 0, 24, 32, 24, 96, 0, 0, 104, 112, 120, 40, 0, 0, 48, 72},
    {11, 56, 8, 32, 48, 56, 69, 68, 112, 120, 136, 72, 168, 184, 48, 72},
    {12, 56, 0, 0, 8, 56, 70, 0, 112, 120, 136, 68, 176, 192, 40, 56},
    {13, 0, 72, 0, 8, 56, 70, 0, 112, 120, 136, 68, 184, 200, 40, 56},
    {14, 0, 72, 0, 8, 56, 74, 0, 112, 120, 136, 68, 192, 208, 40, 56},
};

static void *sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

static void find_eval_loop(struct mh__python *py)
{
    void *f = sym("_PyEval_EvalFrameDefault");
    Dl_info info;
    const void *s = NULL;
    if (f && dladdr1(f, &info, (void **)&s, RTLD_DL_SYMENT) && s) {
        const unsigned char *e = s;
        uint64_t size;
        memcpy(&size, e + 16, sizeof size); /* Elf64_Sym.st_size */
        py->eval_lo = (uintptr_t)f;
        py->eval_hi = (uintptr_t)f + (uintptr_t)size;
    }
}

int mh__python_find(struct mh__python *py, char *why, size_t whylen)
{
    memset(py, 0, sizeof *py);
    const char *(*version)(void) = (const char *(*)(void))sym("Py_GetVersion");
    py->this_tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
    py->code_type = sym("PyCode_Type");
    py->is_finalizing = (int (*)(void))sym("Py_IsFinalizing");
    if (!py->is_finalizing)
        py->is_finalizing = (int (*)(void))sym("_Py_IsFinalizing");
    if (!version || !py->this_tstate || !py->code_type || !py->is_finalizing) {
        snprintf(why, whylen, "no Python interpreter in this process");
        return MH_EUNAVAILABLE;
    }
    py->present = 1;
    int major = 0, minor = 0;
    const char *v = version();
    if (sscanf(v, "%d.%d", &major, &minor) != 2 || major != 3) {
        snprintf(why, whylen, "unrecognized Python version '%.40s'", v);
        return MH_EUNSUPPORTED;
    }
    py->minor = minor;
    if (sym("_Py_DecRefShared")) { /* exported by free-threaded builds only */
        snprintf(why, whylen, "CPython 3.%d free-threaded: frame layout not known", minor);
        return MH_EUNSUPPORTED;
    }
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].minor == minor)
            py->layout = &layouts[i];
    if (!py->layout) {
        snprintf(why, whylen, "CPython 3.%d: frame layout not known", minor);
        return MH_EUNSUPPORTED;
    }
    find_eval_loop(py);
    return 0;
}

/* ---- strings and bytes, read from object memory ---------------------------- */

static size_t put_utf8(char *out, size_t cap, size_t n, uint32_t c)
{
    char b[4];
    size_t k;
    if (c < 0x80) {
        b[0] = (char)c;
        k = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | (c >> 6));
        b[1] = (char)(0x80 | (c & 63));
        k = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | (c >> 12));
        b[1] = (char)(0x80 | ((c >> 6) & 63));
        b[2] = (char)(0x80 | (c & 63));
        k = 3;
    } else {
        b[0] = (char)(0xf0 | (c >> 18));
        b[1] = (char)(0x80 | ((c >> 12) & 63));
        b[2] = (char)(0x80 | ((c >> 6) & 63));
        b[3] = (char)(0x80 | (c & 63));
        k = 4;
    }
    if (n + k >= cap)
        return n;
    memcpy(out + n, b, k);
    return n + k;
}

/* PyASCIIObject: refcnt, type, length (16), hash (24), state (32): interned
 * 2 bits, kind 3, compact 1, ascii 1; the same in 3.10-3.14. */
int mh__pystr_copy(const struct mh__pylayout *l, const void *str, char *out, size_t cap)
{
    out[0] = '\0';
    if (!str || cap == 0)
        return -1;
    const unsigned char *p = str;
    int64_t length;
    uint32_t state;
    memcpy(&length, p + 16, sizeof length);
    memcpy(&state, p + 32, sizeof state);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4))
        return -1;
    const unsigned char *data = p + (ascii ? l->str_ascii_size : l->str_compact_size);
    size_t n = 0;
    for (int64_t i = 0; i < length; i++) {
        uint32_t c = kind == 1   ? data[i]
                     : kind == 2 ? ((const uint16_t *)data)[i]
                                 : ((const uint32_t *)data)[i];
        size_t m = put_utf8(out, cap, n, c);
        if (m == n)
            break;
        n = m;
    }
    out[n] = '\0';
    return (int)n;
}

/* PyBytesObject: ob_size at 16, ob_sval at 32 in 3.10-3.14. */
const uint8_t *mh__pybytes(const void *bytes, size_t *len)
{
    int64_t n;
    memcpy(&n, (const char *)bytes + 16, sizeof n);
    *len = n > 0 ? (size_t)n : 0;
    return (const uint8_t *)bytes + 32;
}

int mh__python_gil_take(void)
{
    int (*initialized)(void) = (int (*)(void))sym("Py_IsInitialized");
    int (*finalizing)(void) = (int (*)(void))sym("Py_IsFinalizing");
    if (!finalizing)
        finalizing = (int (*)(void))sym("_Py_IsFinalizing");
    int (*ensure)(void) = (int (*)(void))sym("PyGILState_Ensure");
    if (!initialized || !ensure || !sym("PyGILState_Release") || !initialized())
        return MH_EUNAVAILABLE;
    if (finalizing && finalizing())
        return MH_ESTATE;
    return ensure();
}

void mh__python_gil_give(int state)
{
    void (*release)(int) = (void (*)(int))sym("PyGILState_Release");
    if (state >= 0 && release)
        release(state);
}
