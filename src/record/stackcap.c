/* stackcap.c - capture and resolution of allocation stacks for the torch
 * bridge: the allocating thread walks its Python frames (pywalk.c), merges
 * them with native return addresses for `--stacks all`, and interns the
 * sequence in the trie (stacktrie.c); the drain thread later turns a trie
 * node into recorder frames (file, function, line) and a stack id.
 *
 * Hot path: a per-thread memo of the previous capture lets a stack that
 * shares its outer frames with the last one skip their hash probes (each
 * reused frame is still checked against its live code object), and a
 * per-thread direct-mapped cache of trie edges answers most of the other
 * probes from the thread's own cache lines instead of the shared table
 * (a probe there is a cache miss: tens of MiB, random slots). No lock,
 * no GIL, no allocation after a thread's first capture except the copy of
 * a code object seen for the first time.
 *
 * Merge rule for native frames: each return address inside CPython's eval
 * loop stands for the Python frames run by that call of the loop (3.10:
 * one; 3.11: up to the entry frame; 3.12+: up to the C-stack shim); Python
 * frames left over go after the native ones. */
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "memhist/recorder.h"
#include "memhist/torch.h"
#include "pystack.h"

#define MAX_FRAMES MH_TORCH_FRAMES_MAX
#define EDGE_BITS 12

static struct mh__python g_py;
struct code_range {
    uintptr_t lo, hi;
};
static struct code_range skip; /* the capturing module's code: left out of native stacks */
/* a module of memhist's around the program's calls, left out anywhere; set
 * while other threads may capture, hence atomic */
static _Atomic uintptr_t hide_lo, hide_hi;
static _Atomic int g_ready;
static _Atomic uint64_t g_lost;

struct item {
    const void *code; /* NULL: native */
    uint64_t pos;
};

/* A trie edge (parent, frame) -> child, as the trie answered it (edges
 * never change: nodes are never removed). child 0: empty. */
struct edge {
    uint32_t parent, code, child;
    uint64_t pos;
};

/* One thread's memo (outermost first), edge cache and scratch space. */
struct memo {
    struct edge edges[1 << EDGE_BITS];
    int n;
    const void *ptr[MAX_FRAMES];
    uint64_t pos[MAX_FRAMES];
    const struct mh__code *info[MAX_FRAMES];
    uint32_t node[MAX_FRAMES];
    struct mh__pyframe py[MAX_FRAMES];
    struct item items[MAX_FRAMES];
};

static inline uint32_t edge_slot(uint32_t parent, const struct mh__fkey *k)
{
    uint64_t h =
        ((uint64_t)parent << 32 | k->code) * 0x9E3779B97F4A7C15ull ^ k->pos * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(h >> (64 - EDGE_BITS));
}

/* The trie's child of `parent` for `k`, from the thread's edge cache when
 * it has it. */
static uint32_t child_of(struct memo *m, uint32_t parent, const struct mh__fkey *k)
{
    struct edge *e = &m->edges[edge_slot(parent, k)];
    if (e->child && e->parent == parent && e->code == k->code && e->pos == k->pos)
        return e->child;
    uint32_t c = mh__trie_child(parent, k);
    if (c)
        *e = (struct edge){parent, k->code, c, k->pos};
    return c;
}

static pthread_key_t memo_key;
static _Thread_local struct memo *t_memo;

static void free_memo(void *m)
{
    free(m);
}

static int init_rc = MH_ESTATE;
static char init_why[256];

static void init_once(void)
{
    if (pthread_key_create(&memo_key, free_memo) != 0) {
        snprintf(init_why, sizeof init_why, "no thread-specific key for the capture memo");
        init_rc = MH_ENOMEM;
        return;
    }
    char why[200] = "";
    int rc = mh__python_find(&g_py, why, sizeof why);
    if (rc == MH_EUNAVAILABLE) {
        g_py.layout = NULL; /* no Python: native frames only */
        snprintf(init_why, sizeof init_why, "memhist (no Python in this process)");
    } else if (rc < 0 || (rc = mh__python_validate(&g_py, why, sizeof why)) < 0) {
        snprintf(init_why, sizeof init_why, "%s", why);
        init_rc = rc;
        return;
    } else {
        snprintf(init_why, sizeof init_why, "memhist frame walker (CPython 3.%d)", g_py.minor);
    }
    if (mh__trie_reserve() < 0) {
        snprintf(init_why, sizeof init_why, "no memory for the stack trie");
        init_rc = MH_ENOMEM;
        return;
    }
    mh__code_reserve();
    init_rc = 0;
    atomic_store(&g_ready, 1);
}

int mh__stack_init(char *why, size_t whylen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_once);
    snprintf(why, whylen, "%s", init_why);
    return init_rc;
}

int mh__stack_ready(void)
{
    return atomic_load_explicit(&g_ready, memory_order_acquire);
}

uint64_t mh__stack_lost(void)
{
    return atomic_load(&g_lost);
}

static struct memo *my_memo(void)
{
    if (t_memo)
        return t_memo;
    struct memo *m = calloc(1, sizeof *m);
    if (m && pthread_setspecific(memo_key, m) != 0) {
        free(m);
        m = NULL;
    }
    return t_memo = m;
}

static int is_eval_loop(uintptr_t ip)
{
    return ip >= g_py.eval_lo && ip < g_py.eval_hi;
}

/* Innermost-first merge of native and Python frames into m->items. */
static int merge(struct memo *m, int np, const uintptr_t *ips, size_t nips)
{
    int n = 0, pi = 0;
    uintptr_t lo = atomic_load_explicit(&hide_lo, memory_order_relaxed);
    uintptr_t hi = atomic_load_explicit(&hide_hi, memory_order_relaxed);
    for (size_t i = 0; i < nips && n < MAX_FRAMES; i++) {
        if (pi < np && is_eval_loop(ips[i])) {
            while (pi < np && n < MAX_FRAMES) {
                const struct mh__pyframe *f = &m->py[pi++];
                m->items[n++] = (struct item){f->code, (uint64_t)(int64_t)f->offset};
                if (f->entry_end)
                    break;
            }
        } else if (ips[i] < lo || ips[i] >= hi) {
            m->items[n++] = (struct item){NULL, ips[i]};
        }
    }
    for (; pi < np && n < MAX_FRAMES; pi++)
        m->items[n++] = (struct item){m->py[pi].code, (uint64_t)(int64_t)m->py[pi].offset};
    return n;
}

/* Whether the copied code `c` still describes the live object at `code`
 * (the fingerprint check of pycode.c, inlined for the memo). */
static inline int still_same(const struct mh__code *c, const char *code)
{
    const struct mh__pylayout *l = g_py.layout;
    return c && c->ptr == code && c->filename == *(const void *const *)(code + l->co_filename) &&
           c->name == *(const void *const *)(code + l->co_name) &&
           c->linetable == *(const void *const *)(code + l->co_linetable) &&
           c->firstlineno == *(const int *)(code + l->co_firstlineno);
}

/* Interns items (innermost first) outermost first, reusing the memo's
 * prefix while it still describes the same live frames. */
static uint32_t intern_items(struct memo *m, int n)
{
    uint32_t node = 0;
    int i = 0;
    for (; i < n && i < m->n; i++) {
        const struct item *it = &m->items[n - 1 - i];
        if (m->ptr[i] != it->code || m->pos[i] != it->pos ||
            (it->code && !still_same(m->info[i], it->code)))
            break;
        node = m->node[i];
    }
    for (; i < n; i++) {
        const struct item *it = &m->items[n - 1 - i];
        struct mh__fkey key = {it->code ? mh__code_id(&g_py, it->code) : MH__NATIVE, it->pos};
        if (key.code == 0 || (node = child_of(m, node, &key)) == 0) {
            m->n = i;
            atomic_fetch_add_explicit(&g_lost, 1, memory_order_relaxed);
            return 0;
        }
        m->ptr[i] = it->code;
        m->pos[i] = it->pos;
        m->info[i] = it->code ? mh__code_get(key.code) : NULL;
        m->node[i] = node;
    }
    m->n = n;
    return node;
}

struct module_search {
    uintptr_t addr;
    struct code_range found;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct module_search *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && q->addr >= lo && q->addr < hi) {
            q->found = (struct code_range){lo, hi};
            return 1;
        }
    }
    return 0;
}

static struct code_range module_of(const void *code)
{
    struct module_search q = {(uintptr_t)code, {0, 0}};
    dl_iterate_phdr(find_module, &q);
    return q.found;
}

void mh__stack_skip_module(const void *code)
{
    skip = module_of(code);
}

void mh__stack_hide_module(const void *code)
{
    struct code_range r = module_of(code);
    atomic_store_explicit(&hide_hi, 0, memory_order_relaxed); /* empty while it changes */
    atomic_store_explicit(&hide_lo, r.lo, memory_order_relaxed);
    atomic_store_explicit(&hide_hi, r.hi, memory_order_relaxed);
}

uint32_t mh__stack_capture(const uintptr_t *ips, size_t nips, int max_frames)
{
    if (!atomic_load_explicit(&g_ready, memory_order_relaxed))
        return 0;
    struct memo *m = my_memo();
    if (!m)
        return 0;
    if (max_frames <= 0 || max_frames > MAX_FRAMES)
        max_frames = MAX_FRAMES;
    /* the unwinder's own frame and the capturing module's are not the program's */
    size_t inner = nips ? 1 : 0;
    while (inner < nips && ips[inner] >= skip.lo && ips[inner] < skip.hi)
        inner++;
    ips += inner;
    nips -= inner;
    int np = mh__pywalk(&g_py, m->py, max_frames);
    int n = nips ? merge(m, np, ips, nips) : np;
    if (!nips)
        for (int i = 0; i < np; i++)
            m->items[i] = (struct item){m->py[i].code, (uint64_t)(int64_t)m->py[i].offset};
    if (n > max_frames) /* merged native and Python frames: the innermost max_frames */
        n = max_frames;
    return n ? intern_items(m, n) : 0;
}

/* ---- resolution (drain thread) ----------------------------------------------- */

static pthread_mutex_t res_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t res_rec; /* mh_recorder_serial of the recorder the cached ids belong to */
static uint64_t res_gen, res_seen_gen;
static uint32_t *res_frame, *res_stack;
static uint32_t res_cap;

void mh__stack_forget(void)
{
    pthread_mutex_lock(&res_mu);
    res_gen++;
    pthread_mutex_unlock(&res_mu);
}

void mh__stack_with_resolver(void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&res_mu);
    fn(arg);
    pthread_mutex_unlock(&res_mu);
}

/* Grows the per-node caches to cover `node`; clears them for a new recorder. */
static int cache_for(struct mh_recorder *rec, uint32_t node)
{
    if (mh_recorder_serial(rec) != res_rec || res_gen != res_seen_gen) {
        if (res_frame) {
            memset(res_frame, 0, sizeof *res_frame * res_cap);
            memset(res_stack, 0, sizeof *res_stack * res_cap);
        }
        res_rec = mh_recorder_serial(rec);
        res_seen_gen = res_gen;
    }
    if (node < res_cap)
        return 0;
    uint32_t cap = res_cap ? res_cap : 4096;
    while (cap <= node)
        cap *= 2;
    uint32_t *f = realloc(res_frame, sizeof *f * cap);
    if (f)
        res_frame = f;
    uint32_t *s = realloc(res_stack, sizeof *s * cap);
    if (s)
        res_stack = s;
    if (!f || !s)
        return MH_ENOMEM;
    memset(res_frame + res_cap, 0, sizeof *f * (cap - res_cap));
    memset(res_stack + res_cap, 0, sizeof *s * (cap - res_cap));
    res_cap = cap;
    return 0;
}

static int64_t intern_key(struct mh_recorder *rec, const struct mh__fkey *k, mh__native_namer namer,
                          void *user)
{
    if (k->code != MH__NATIVE) {
        const struct mh__code *c = mh__code_get(k->code);
        if (!c)
            return MH_EINVAL;
        int line = mh__linetable_line(c->minor, c->table, c->table_len, c->firstlineno,
                                      (int)(int64_t)k->pos);
        return mh_intern_frame(rec, c->file, c->func, line < 0 ? 0 : (uint32_t)line);
    }
    char file[512] = "", func[1024] = "";
    uint32_t line = 0;
    if (!namer || namer(user, (uintptr_t)k->pos, file, sizeof file, func, sizeof func, &line) < 0) {
        snprintf(file, sizeof file, "??");
        snprintf(func, sizeof func, "0x%llx", (unsigned long long)k->pos);
    }
    return mh_intern_frame(rec, file, func, line);
}

static uint32_t resolve_locked(struct mh_recorder *rec, uint32_t node, mh__native_namer namer,
                               void *user)
{
    if (cache_for(rec, node) < 0)
        return 0;
    if (res_stack[node])
        return res_stack[node];
    uint32_t ids[MAX_FRAMES];
    size_t k = 0;
    for (uint32_t n = node; n && k < MAX_FRAMES;) {
        uint32_t parent;
        struct mh__fkey key;
        if (mh__trie_node(n, &parent, &key) < 0)
            break;
        if (!res_frame[n]) {
            int64_t id = intern_key(rec, &key, namer, user);
            res_frame[n] = id > 0 ? (uint32_t)id : UINT32_MAX;
        }
        if (res_frame[n] != UINT32_MAX)
            ids[k++] = res_frame[n];
        n = parent;
    }
    int64_t sid = k ? mh_intern_stack(rec, ids, k) : 0;
    return res_stack[node] = sid > 0 ? (uint32_t)sid : 0;
}

uint32_t mh__stack_resolve(struct mh_recorder *rec, uint32_t node, mh__native_namer namer,
                           void *user)
{
    if (!rec || node == 0)
        return 0;
    pthread_mutex_lock(&res_mu);
    uint32_t sid = resolve_locked(rec, node, namer, user);
    pthread_mutex_unlock(&res_mu);
    return sid;
}

int mh__stack_describe(uint32_t node, char *out, size_t cap)
{
    size_t n = 0;
    if (cap)
        out[0] = '\0';
    for (int depth = 0; node && depth < MAX_FRAMES; depth++) {
        uint32_t parent;
        struct mh__fkey k;
        if (mh__trie_node(node, &parent, &k) < 0)
            return MH_EINVAL;
        int w;
        const struct mh__code *c = k.code == MH__NATIVE ? NULL : mh__code_get(k.code);
        if (c)
            w = snprintf(out + n, cap - n, "%s\t%s\t%d\n", c->file, c->func,
                         mh__linetable_line(c->minor, c->table, c->table_len, c->firstlineno,
                                            (int)(int64_t)k.pos));
        else
            w = snprintf(out + n, cap - n, "0x%llx\n", (unsigned long long)k.pos);
        if (w < 0 || (size_t)w >= cap - n)
            return MH_ELIMIT;
        n += (size_t)w;
        node = parent;
    }
    return (int)n;
}
