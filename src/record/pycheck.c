/* pycheck.c - the start-up check of the CPython frame layout: with the GIL
 * taken once, walk the calling thread's frames through the layout offsets
 * (pywalk.c) and through CPython's public API, and compare code objects,
 * instruction offsets, file and function names and line numbers. Own
 * capture is used only when they agree; stackcap.c falls back otherwise.
 *
 * Runs at attach time (never in the allocator hook). Every CPython function
 * is looked up with dlsym, as in pylayout.c. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "memhist/error.h"
#include "pystack.h"

#define CHECK_FRAMES 64

struct capi {
    int (*ensure)(void);
    void (*release)(int);
    void *(*get_frame)(void);
    void *(*get_back)(void *);
    void *(*get_code)(void *);
    void *(*getattr)(void *, const char *);
    const char *(*as_utf8)(void *);
    long (*as_long)(void *);
    int (*addr2line)(void *, int);
    void (*decref)(void *);
};

static int load_capi(struct capi *c)
{
    c->ensure = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    c->release = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
    c->get_frame = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_GetFrame");
    c->get_back = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetBack");
    c->get_code = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetCode");
    c->getattr = (void *(*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyObject_GetAttrString");
    c->as_utf8 = (const char *(*)(void *))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
    c->as_long = (long (*)(void *))dlsym(RTLD_DEFAULT, "PyLong_AsLong");
    c->addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    c->decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
    return c->ensure && c->release && c->get_frame && c->get_back && c->get_code && c->getattr &&
           c->as_utf8 && c->as_long && c->addr2line && c->decref;
}

static long attr_long(const struct capi *c, void *obj, const char *name)
{
    void *v = c->getattr(obj, name);
    long r = v ? c->as_long(v) : -1;
    if (v)
        c->decref(v);
    return r;
}

/* Compares one string field read through the layout with the attribute. */
static int same_str(const struct capi *c, const struct mh__python *py, void *code, const char *attr,
                    uint32_t off)
{
    void *s = c->getattr(code, attr);
    if (!s)
        return 0;
    char mine[1024];
    const char *theirs = c->as_utf8(s);
    int ok = s == *(void **)((char *)code + off) && theirs &&
             mh__pystr_copy(py->layout, s, mine, sizeof mine) >= 0 && strcmp(mine, theirs) == 0;
    c->decref(s);
    return ok;
}

/* Line through the copied-table parser vs PyCode_Addr2Line. */
static int same_line(const struct capi *c, const struct mh__python *py, void *code, int lasti)
{
    void *t = c->getattr(code, "co_linetable");
    if (!t)
        return 0;
    size_t len;
    const uint8_t *table = mh__pybytes(t, &len);
    int ok = t == *(void **)((char *)code + py->layout->co_linetable);
    long first = attr_long(c, code, "co_firstlineno");
    ok = ok && first == *(const int *)((char *)code + py->layout->co_firstlineno) &&
         mh__linetable_line(py->minor, table, len, (int)first, lasti) == c->addr2line(code, lasti);
    c->decref(t);
    return ok;
}

/* Walks the public chain and compares it frame by frame; returns the
 * number of frames that agreed, or -1 - i at the first that did not. */
static int compare(const struct capi *c, const struct mh__python *py,
                   const struct mh__pyframe *mine, int n)
{
    void *f = c->get_frame(), *owned = NULL;
    int i = 0, bad = 0;
    for (; f && i < CHECK_FRAMES && !bad; i++) {
        void *code = c->get_code(f);
        int lasti = (int)attr_long(c, f, "f_lasti");
        bad = i >= n || mine[i].code != code || mine[i].offset != (lasti < 0 ? -1 : lasti) ||
              !same_str(c, py, code, "co_filename", py->layout->co_filename) ||
              !same_str(c, py, code, "co_name", py->layout->co_name) ||
              !same_line(c, py, code, lasti);
        c->decref(code);
        void *back = c->get_back(f);
        if (owned)
            c->decref(owned);
        owned = f = back;
    }
    if (owned)
        c->decref(owned);
    if (bad)
        return -i;
    return (i < CHECK_FRAMES && i != n) ? -(i + 1) : i;
}

int mh__python_validate(const struct mh__python *py, char *why, size_t whylen)
{
    struct capi c;
    if (!py->layout || !load_capi(&c)) {
        snprintf(why, whylen, "CPython 3.%d: frame layout or API not available", py->minor);
        return MH_EUNSUPPORTED;
    }
    int gil = c.ensure();
    struct mh__pyframe mine[CHECK_FRAMES];
    int n = mh__pywalk(py, mine, CHECK_FRAMES);
    int r = compare(&c, py, mine, n);
    c.release(gil);
    if (r < 0) {
        snprintf(why, whylen, "CPython 3.%d: frame walk disagrees with the interpreter at frame %d",
                 py->minor, -r - 1);
        return MH_EUNSUPPORTED;
    }
    return 0;
}
