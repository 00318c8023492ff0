/* pystack.h - memhist's own call-stack capture for the torch bridge:
 * CPython frame walking, the code-object table, the stack trie and the
 * lazy resolution of trie nodes into recorder frames and stacks.
 *
 * Data flow: the bridge's allocator tracker (allocating thread, allocator
 * lock held, GIL held or not) calls mh__stack_capture(), which reads the
 * thread's own CPython frames with per-version field offsets (pylayout.c,
 * pywalk.c), copies a code object's names and line table the first time it
 * is seen (pycode.c), and interns the (code, offset) sequence, optionally
 * merged with native return addresses, in a lock-free trie (stacktrie.c).
 * The event carries the trie node. The recorder's drain thread later calls
 * mh__stack_resolve(), which turns the node into file/function/line frames
 * (linetable.c parses the copied line tables) and a recorder stack id,
 * without the GIL and without any lock the training thread takes.
 * Internal to src/record. */
#ifndef MH_RECORD_PYSTACK_H
#define MH_RECORD_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mh_recorder;

/* ---- line tables (linetable.c) ------------------------------------------------ */

/* The line executing at byte offset `offset` of a code object whose
 * co_linetable is `table` (`len` bytes) and co_firstlineno `first`, for
 * CPython 3.`minor` (10: address/line pairs; 11 and later: the location
 * table). Same answer as PyCode_Addr2Line: `first` for a negative offset,
 * -1 where the table says "no line" or ends before `offset`. */
int mh__linetable_line(int minor, const uint8_t *table, size_t len, int first, int offset);

/* ---- CPython layout (pylayout.c) -------------------------------------------- */

/* Field offsets of one CPython minor version (x86-64 and aarch64 release
 * builds; not free-threaded, not Py_DEBUG). */
struct mh__pylayout {
    int minor;          /* 10..14 */
    uint32_t ts_cframe; /* 3.11/3.12: tstate->cframe; 0 otherwise */
    uint32_t ts_frame;  /* tstate->frame (3.10), cframe->current_frame, tstate->current_frame */
    uint32_t fr_code, fr_back, fr_instr, fr_owner, fr_is_entry;
    uint32_t co_filename, co_name, co_linetable, co_firstlineno, co_firsttraceable, co_adaptive;
    uint32_t str_ascii_size, str_compact_size; /* sizeof PyASCIIObject / PyCompactUnicodeObject */
};

/* The running interpreter, as seen through the dynamic symbol table. */
struct mh__python {
    int present;                       /* libpython symbols found */
    int minor;                         /* 3.minor */
    const struct mh__pylayout *layout; /* NULL: this version's frames are unknown */
    void *(*this_tstate)(void);        /* PyGILState_GetThisThreadState */
    int (*is_finalizing)(void);
    const void *code_type;      /* &PyCode_Type */
    uintptr_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
};

/* Finds the interpreter and its layout (no GIL needed; idempotent).
 * Returns 0, MH_EUNAVAILABLE when the process runs no Python, or
 * MH_EUNSUPPORTED (with `why`) for a version without a layout. */
int mh__python_find(struct mh__python *py, char *why, size_t whylen);

/* Start-up check, taking the GIL itself: walks the calling thread's frames
 * both with the layout and with CPython's public API and compares code
 * objects, offsets, names and line numbers. Returns 0 when they agree (or
 * the thread runs no Python frames to compare), MH_EUNSUPPORTED with `why`
 * otherwise. Never call it from the allocator hook. */
int mh__python_validate(const struct mh__python *py, char *why, size_t whylen);

/* Takes the GIL for a thread that may not hold it (PyGILState_Ensure):
 * returns the state to give back, MH_EUNAVAILABLE when no interpreter runs
 * (nothing taken) or MH_ESTATE while it finalizes. Never in the allocator
 * hook. */
int mh__python_gil_take(void);
/* Gives back what mh__python_gil_take took (no-op for a negative state). */
void mh__python_gil_give(int state);

/* Copies a str object's text as UTF-8 into `out` (always terminated);
 * reads the object's memory only (no Python call). Returns the length, or
 * -1 for a layout it does not know. */
int mh__pystr_copy(const struct mh__pylayout *l, const void *str, char *out, size_t cap);
/* A bytes object's data and size (no Python call). */
const uint8_t *mh__pybytes(const void *bytes, size_t *len);

/* ---- frames (pywalk.c) ---------------------------------------------------------- */

/* One Python frame: the code object and the byte offset of the
 * instruction executing (negative: not started). `entry_end`: the last
 * (outermost) frame run by one call of the eval loop. */
struct mh__pyframe {
    const void *code;
    int32_t offset;
    uint8_t entry_end;
};

/* Walks the calling thread's own frames, innermost first, up to `max`.
 * Safe with or without the GIL; returns the count (0 on a thread without
 * Python or while the interpreter finalizes). */
int mh__pywalk(const struct mh__python *py, struct mh__pyframe *out, int max);

/* ---- code objects (pycode.c) ---------------------------------------------------- */

/* Copied facts about one code object: everything resolution needs. */
struct mh__code {
    const void *ptr;                         /* identity while alive */
    const void *filename, *name, *linetable; /* fingerprint against address reuse */
    int firstlineno;
    int minor;
    const char *file, *func;
    const uint8_t *table;
    size_t table_len;
};

/* The id (1-based) of a live code object, copying it the first time it is
 * seen and again when its address was reused by another object. 0 when the
 * table is full or memory ran out. Any thread; lock-free. */
uint32_t mh__code_id(const struct mh__python *py, const void *code);
/* The code behind an id (NULL for 0 or unknown). */
const struct mh__code *mh__code_get(uint32_t id);
/* Maps the table's pages now (capture is being readied), not on the
 * allocation path. */
void mh__code_reserve(void);

/* ---- the stack trie (stacktrie.c) ---------------------------------------------- */

/* A frame key: a Python frame (code id, offset) or a native return address
 * (code = MH__NATIVE, pos = address). */
#define MH__NATIVE 0xffffffffu
struct mh__fkey {
    uint32_t code;
    uint64_t pos;
};

/* The node for `parent` -> `key` (0 parent = root), creating it. 0 when the
 * trie is full. Any thread; lock-free, no allocation after the first call. */
uint32_t mh__trie_child(uint32_t parent, const struct mh__fkey *key);
/* Allocates the trie and maps its pages now (capture is being readied):
 * 0, or -1 when memory ran out (captures then lose their stacks). */
int mh__trie_reserve(void);
/* A node's parent and key; returns 0, or -1 for an unknown node. */
int mh__trie_node(uint32_t node, uint32_t *parent, struct mh__fkey *key);
/* Nodes in use (for info and tests). */
uint32_t mh__trie_count(void);

/* ---- capture and resolution (stackcap.c) -------------------------------------- */

/* Readies capture; `why` says what was chosen or why Python frames are not
 * available. Returns 0 when own Python capture works, else a negative
 * MH_E* (the caller falls back). Takes the GIL once for validation. */
int mh__stack_init(char *why, size_t whylen);
/* Whether mh__stack_init succeeded. */
int mh__stack_ready(void);
/* Captures the calling thread's stack: Python frames merged with `nips`
 * native return addresses (innermost first, as the unwinder called from the
 * capturing module returns them) when given, cut to the innermost
 * `max_frames` (<= 0: MH_TORCH_FRAMES_MAX). Returns the trie node (0:
 * nothing captured). Hot path. */
uint32_t mh__stack_capture(const uintptr_t *ips, size_t nips, int max_frames);
/* Drops the resolution caches (a new recorder may reuse an old address). */
void mh__stack_forget(void);
/* Leaves the frames of the module holding `code` (the caller's library) and
 * the unwinder's first frame out of the innermost end of native stacks. */
void mh__stack_skip_module(const void *code);
/* Leaves the frames of the module holding `code` out of native stacks
 * wherever they are (memhist's module scope wrapper, called around the
 * program's module calls). One such module; set before capturing. */
void mh__stack_hide_module(const void *code);
/* Stacks lost because the trie or code table was full. */
uint64_t mh__stack_lost(void);

/* Writes the stack of `node` as text, one frame a line, innermost first:
 * "file<TAB>function<TAB>line" or "0x<address>" (tests, diagnostics).
 * Returns the length or a negative MH_E*. */
int mh__stack_describe(uint32_t node, char *out, size_t cap);

/* Names a native address for resolution (file, function, line); returns 0
 * or -1 when unknown. Runs on the drain thread. */
typedef int (*mh__native_namer)(void *user, uintptr_t ip, char *file, size_t filecap, char *func,
                                size_t funccap, uint32_t *line);

/* Runs fn(arg) under the resolver's lock: resolution work done ahead, off the
 * drain thread (the torch bridge reads torch's symbol tables at attach). */
void mh__stack_with_resolver(void (*fn)(void *), void *arg);

/* Interns the stack of trie node `node` into `rec` and returns its stack id
 * (0 on failure). Caches per node and recorder; drain thread only (a lock
 * orders drain threads of different recorders, never the hot path). */
uint32_t mh__stack_resolve(struct mh_recorder *rec, uint32_t node, mh__native_namer namer,
                           void *user);

#ifdef __cplusplus
}
#endif
#endif
