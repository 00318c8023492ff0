/* stack_label.c - picks and formats the most informative frame of a stack
 * (see stacks.h). Offline only: reads definitions from a reader. */
#include "stacks.h"
#include "utf8.h"

#include <stdio.h>
#include <string.h>

static const char *const internal_files[] = {
    /* torch installed, and the parts of a torch source tree that are plumbing */
    "-packages/torch/", "torch/nn/", "torch/_", "torch/autograd/", "torch/optim/", "torch/utils/",
    "torch/cuda/", "torch/amp/", "torch/distributed/", "torch/fx/", "torch/overrides.py",
    "torch/functional.py", "<frozen ", "??", "c10/", "aten/src/", "torch/csrc/", "libtorch",
    "libc10", "libc.so", "libpython", "<built-in>",
    /* CPython's own C sources, as C++ stacks name them */
    "/Objects/", "/Python/", "/Modules/", "/Programs/", "/Parser/",
    /* the C library's process and thread start-up */
    "/csu/", "sysdeps/",
    /* the C++ runtime and the loader */
    "libstdc++", "libgcc_s", "ld-linux",
    /* memhist's own capture and Python package */
    "libmemhist", "/memhist/_",
};

/* Function names that start with these belong to framework namespaces. */
static const char *const internal_prefixes[] = {
    "c10::", "at::", "torch::", "std::", "_Py", "PyEval", "PyObject_", "PyVectorcall",
    "cfunction_", "method_vectorcall", "__libc_start",
};

/* Whole function names of framework glue and thread/process start-up. */
static const char *const internal_names[] = {
    "_call_impl", "_wrapped_call_impl", "__torch_function__", "start_thread", "clone", "clone3",
    "_start", "execute_native_thread_routine",
};

/* The qualified name of a C++ function, past its return type
 * ("void at::cuda::blas::gemm<float>(...)" -> "at::cuda::blas::gemm<float>(...)"). */
static const char *qualified_name(const char *func)
{
    const char *paren = strchr(func, '(');
    const char *name = func;
    for (const char *p = func; *p && (!paren || p < paren); p++)
        if (*p == ' ')
            name = p + 1;
    return name;
}

/* A file of an installed package (site-packages, dist-packages). */
static int installed_package(const char *file)
{
    return strstr(file, "site-packages/") || strstr(file, "dist-packages/");
}

/* A module of the interpreter's standard library (".../lib/python3.11/
 * functools.py"); installed packages other than torch are code that says
 * who wanted the memory (a transformers or timm model's forward), so they
 * are not. */
static int python_stdlib(const char *file)
{
    const char *lib = strstr(file, "/lib/python3");
    return lib && !installed_package(lib);
}

int mh__frame_is_internal(const char *file, const char *func)
{
    file = file ? file : "";
    func = func ? func : "";
    if (python_stdlib(file))
        return 1;
    for (size_t i = 0; i < sizeof internal_files / sizeof internal_files[0]; i++)
        if (strstr(file, internal_files[i]))
            return 1;
    const char *qual = qualified_name(func);
    for (size_t i = 0; i < sizeof internal_prefixes / sizeof internal_prefixes[0]; i++)
        if (strncmp(func, internal_prefixes[i], strlen(internal_prefixes[i])) == 0 ||
            strncmp(qual, internal_prefixes[i], strlen(internal_prefixes[i])) == 0)
            return 1;
    for (size_t i = 0; i < sizeof internal_names / sizeof internal_names[0]; i++)
        if (strcmp(func, internal_names[i]) == 0)
            return 1;
    if (strcmp(func, "??") == 0 || strncmp(func, "0x", 2) == 0 || (!*func && strstr(file, ".so")))
        return 1; /* native code with no symbol */
    return *file == '\0'; /* native code with no source file (glibc's __clone3) */
}

int mh__frame_is_program(const char *file, const char *func)
{
    return !mh__frame_is_internal(file, func) && !installed_package(file ? file : "");
}

/* Frames that say nothing about who wanted the memory. */
static const char *const plumbing[] = {
    "CachingAllocator", "c10::cuda::", "c10::Allocator", "c10::StorageImpl", "c10::TensorImpl",
    "c10::intrusive_ptr", "memhist", "mh_", "mh__", "operator new", "malloc", "__libc", "std::",
    "libc.so", "libstdc++", "libgcc", "ld-linux", "libmemhist",
    /* torch's own stack capture */
    "torch::unwind::", "torch::CapturedTraceback", "torch::cuda::(anonymous namespace)::gather",
};

static int cpp_meaningful(const char *file, const char *func)
{
    file = file ? file : "";
    func = func ? func : "";
    if (!*func || strcmp(func, "??") == 0 || strncmp(func, "0x", 2) == 0)
        return 0;
    const char *q = qualified_name(func);
    for (size_t i = 0; i < sizeof plumbing / sizeof plumbing[0]; i++)
        if (strstr(file, plumbing[i]) || strncmp(q, plumbing[i], strlen(plumbing[i])) == 0 ||
            (i < 5 && strstr(q, plumbing[i])))
            return 0;
    return 1;
}

int mh__stack_is_compiled(const struct mh_reader *r, uint32_t stack)
{
    const uint32_t *frames;
    size_t n;
    if (stack == 0 || mh_reader_stack(r, stack, &frames, &n) != 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        if (mh_reader_frame(r, frames[i], &f) == 0 && f.file &&
            (strncmp(f.file, "<eval_with_key>", 15) == 0 || strstr(f.file, "torchinductor_")))
            return 1;
    }
    return 0;
}

int mh__stack_best_index(const struct mh_reader *r, uint32_t stack)
{
    const uint32_t *frames;
    size_t n;
    if (stack == 0 || mh_reader_stack(r, stack, &frames, &n) != 0 || n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        if (mh_reader_frame(r, frames[i], &f) == 0 && !mh__frame_is_internal(f.file, f.func))
            return (int)i;
    }
    /* only framework frames (a C++ stack of autograd's threads): the
     * innermost ATen operation that is not an empty tensor's (bmm, not the
     * empty_memory_format it calls for its output), else the outermost one
     * (new_empty_strided, which autograd asked for) */
    int outermost_op = -1;
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        char op[128];
        if (mh_reader_frame(r, frames[i], &f) != 0 || !mh__frame_aten_op(f.func, op, sizeof op))
            continue;
        if (!strstr(op, "empty"))
            return (int)i;
        outermost_op = (int)i;
    }
    if (outermost_op >= 0)
        return outermost_op;
    /* else the innermost ATen function, past the stack capture and the allocator */
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        const char *q = mh_reader_frame(r, frames[i], &f) == 0 && f.func ? qualified_name(f.func)
                                                                          : "";
        if (strncmp(q, "at::", 4) == 0 && strncmp(q, "at::detail::", 12) != 0 && !strstr(q, "empty"))
            return (int)i;
    }
    /* no ATen op: the innermost named C++ function that is not the
     * allocator, memhist, the C/C++ runtime or an unresolved address */
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        if (mh_reader_frame(r, frames[i], &f) == 0 && cpp_meaningful(f.file, f.func))
            return (int)i;
    }
    return 0;
}

const char *mh__short_path(const char *file)
{
    const char *last = strrchr(file, '/');
    if (!last)
        return file;
    for (const char *p = last - 1; p >= file; p--)
        if (*p == '/')
            return p + 1;
    return file;
}

/* The last path component of a library ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6:869538"
 * -> "libstdc++.so.6"), for a frame with no symbol. */
static void library_name(const char *file, char *out, size_t len)
{
    const char *slash = strrchr(file, '/');
    const char *base = slash ? slash + 1 : file;
    snprintf(out, len, "%.*s", (int)strcspn(base, ":+"), base);
}

/* Labels of frames that are not a file and a line: an op named by the
 * recorder (MH__FRAME_TORCH_INTERNAL), the blocks live before recording
 * (MH__FRAME_BEFORE_RECORDING) and native code without a symbol.
 * Returns 1 when it wrote buf. */
static int special_frame(const struct mh_frame *f, char *buf, size_t len)
{
    const char *file = f->file ? f->file : "", *func = f->func ? f->func : "";
    if (strcmp(file, MH__FRAME_TORCH_INTERNAL) == 0) {
        snprintf(buf, len, "torch internal: %s", func);
        return 1;
    }
    if (strcmp(file, MH__FRAME_BEFORE_RECORDING) == 0) {
        snprintf(buf, len, "%s", func);
        return 1;
    }
    if (f->line == 0 && (!*func || strcmp(func, "??") == 0) && *file) {
        char lib[96];
        library_name(file, lib, sizeof lib);
        snprintf(buf, len, "native code in %s (no symbol)", lib);
        return 1;
    }
    return 0;
}

/* A frame in a shared library, whose "line" is the offset of the address in
 * the library (torch's snapshots and memhist's native frames alike). */
static int in_library(const struct mh_frame *f)
{
    const char *slash = f->file ? strrchr(f->file, '/') : NULL;
    const char *so = strstr(slash ? slash : f->file ? f->file : "", ".so");
    if (!so || (so[3] && so[3] != '.'))
        return 0;
    for (so += 3; *so; so++)
        if (*so != '.' && (*so < '0' || *so > '9'))
            return 0;
    return 1;
}

/* `file` past `dir` when it lies below it ("dir/a/b.py" -> "a/b.py"). */
static const char *below(const char *file, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return n && strncmp(file, dir, n) == 0 && file[n] == '/' && file[n + 1] ? file + n + 1 : NULL;
}

/* Past the last "/lib/pythonX.Y/" of a path: the standard library's part. */
static const char *past_stdlib(const char *file)
{
    const char *at = NULL;
    for (const char *p = strstr(file, "/lib/python3"); p; p = strstr(p + 1, "/lib/python3"))
        at = p;
    const char *slash = at ? strchr(at + 12, '/') : NULL;
    return slash && slash[1] ? slash + 1 : NULL;
}

const char *mh__display_path(const struct mh_reader *r, const char *file)
{
    static const char *const packages[] = {"/site-packages/", "/dist-packages/"};
    const char *short_path = NULL;
    for (size_t i = 0; i < 2; i++)
        for (const char *p = strstr(file, packages[i]); p; p = strstr(p + 1, packages[i]))
            short_path = p + strlen(packages[i]);
    if (short_path && *short_path)
        return short_path;
    if ((short_path = past_stdlib(file)) != NULL)
        return short_path;
    if (r && (short_path = below(file, mh_reader_meta(r, "cwd"))) != NULL)
        return short_path;
    if (r && (short_path = below(file, mh_reader_meta(r, "sys_prefix"))) != NULL)
        return short_path;
    return file;
}

/* A frame as one line: its file as `path` gives it, the line and function. */
static const char *frame_line(const struct mh_reader *r, uint32_t frame, int display, char *buf,
                              size_t len)
{
    struct mh_frame f;
    if (mh_reader_frame(r, frame, &f) != 0) {
        snprintf(buf, len, "<frame %u>", frame);
        return buf;
    }
    const char *file = f.file && display && !in_library(&f) ? mh__display_path(r, f.file) : f.file;
    if (special_frame(&f, buf, len))
        ;
    else if (f.line && in_library(&f))
        snprintf(buf, len, "%s+0x%x %s", file, f.line, f.func);
    else if (f.line)
        snprintf(buf, len, "%s:%u %s", file, f.line, f.func);
    else
        snprintf(buf, len, "%s %s", file, f.func);
    return mh__utf8_escape_in_place(buf, len, MH__UTF8_ESC_CONTROL);
}

const char *mh__frame_text(const struct mh_reader *r, uint32_t frame, char *buf, size_t len)
{
    return frame_line(r, frame, 0, buf, len);
}

const char *mh__frame_display(const struct mh_reader *r, uint32_t frame, char *buf, size_t len)
{
    return frame_line(r, frame, 1, buf, len);
}

int mh__frame_aten_op(const char *func, char *op, size_t len)
{
    const char *p = func ? strstr(func, "at::_ops::") : NULL;
    if (!p)
        return 0;
    p += strlen("at::_ops::");
    const char *end = strstr(p, "::");
    if (!end || end == p)
        return 0;
    snprintf(op, len, "%.*s", (int)(end - p), p);
    return 1;
}

/* The autograd node ("BmmBackward0", "CopySlices") of the innermost frame
 * outside `from` that runs one's apply, into `node`; 0 if none does. */
static int autograd_node(const struct mh_reader *r, const uint32_t *frames, size_t n, size_t from,
                         char *node, size_t len)
{
    for (size_t i = from; i < n; i++) {
        struct mh_frame f;
        const char *q = mh_reader_frame(r, frames[i], &f) == 0 && f.func ? qualified_name(f.func)
                                                                        : "";
        const char *end = strncmp(q, "torch::autograd::", 17) == 0 ? strstr(q, "::apply(") : NULL;
        if (!end)
            continue;
        const char *name = q;
        for (const char *p = q; p < end; p++)
            if (p[0] == ':' && p[1] == ':')
                name = p + 2;
        snprintf(node, len, "%.*s", (int)(end - name), name);
        return 1;
    }
    return 0;
}

const char *mh__stack_label(const struct mh_reader *r, uint32_t stack, char *buf, size_t len)
{
    int best = mh__stack_best_index(r, stack);
    const uint32_t *frames;
    size_t n;
    struct mh_frame f;
    if (best < 0 || mh_reader_stack(r, stack, &frames, &n) != 0 ||
        mh_reader_frame(r, frames[best], &f) != 0) {
        snprintf(buf, len, "<no stack>");
        return buf;
    }
    char op[128], node[128];
    if (special_frame(&f, buf, len))
        ;
    else if (mh__frame_aten_op(f.func, op, sizeof op) && mh__frame_is_internal(f.file, f.func)) {
        int in_node = autograd_node(r, frames, n, (size_t)best, node, sizeof node);
        snprintf(buf, len, "aten op %s%s%s", op, in_node ? " in " : "", in_node ? node : "");
    } else if (f.line && !in_library(&f)) /* a library's offset is no line to show */
        snprintf(buf, len, "%s:%u %s", mh__short_path(f.file), f.line, f.func);
    else
        snprintf(buf, len, "%s %s", mh__short_path(f.file), f.func);
    return mh__utf8_escape_in_place(buf, len, MH__UTF8_ESC_CONTROL);
}
