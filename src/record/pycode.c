/* pycode.c - the code-object table: code object -> stable code id, with
 * the names and line table copied out of the object the first time it is
 * seen, so that resolution never touches the (possibly dead) object.
 *
 * Called on the allocation path by stackcap.c. Lock-free open addressing
 * keyed by the object's address; an entry is trusted only while the live
 * object still has the same filename, name, line table and first line
 * (addresses of dead code objects are reused), otherwise the object gets a
 * new id. Entries are never freed while the process runs: frames already
 * interned keep pointing at them. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "prefault.h"
#include "pystack.h"

#define CODE_BITS 19
#define CODE_SLOTS (1u << CODE_BITS)
#define CODE_CAP (CODE_SLOTS / 2)

static _Atomic uint32_t slots[CODE_SLOTS];
static struct mh__code *_Atomic codes[CODE_CAP + 1];
static _Atomic uint32_t ncodes;

#define FIELD(code, off) (*(const void *const *)((const char *)(code) + (off)))

void mh__code_reserve(void)
{
    mh__prefault((void *)slots, sizeof slots, 1); /* probed at random; codes[] fills in order */
}

static uint32_t hash_ptr(const void *p)
{
    return (uint32_t)((((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - CODE_BITS));
}

static int same_object(const struct mh__pylayout *l, const struct mh__code *c, const void *code)
{
    return c->ptr == code && c->filename == FIELD(code, l->co_filename) &&
           c->name == FIELD(code, l->co_name) && c->linetable == FIELD(code, l->co_linetable) &&
           c->firstlineno == *(const int *)((const char *)code + l->co_firstlineno);
}

/* Copies a live code object; returns its new id or 0. */
static uint32_t copy_code(const struct mh__python *py, const void *code)
{
    const struct mh__pylayout *l = py->layout;
    char file[1024], func[512];
    if (mh__pystr_copy(l, FIELD(code, l->co_filename), file, sizeof file) < 0)
        strcpy(file, "<unknown>");
    if (mh__pystr_copy(l, FIELD(code, l->co_name), func, sizeof func) < 0)
        strcpy(func, "<unknown>");
    size_t tlen = 0;
    const uint8_t *table = mh__pybytes(FIELD(code, l->co_linetable), &tlen);
    size_t nf = strlen(file) + 1, nn = strlen(func) + 1;
    struct mh__code *c = malloc(sizeof *c + nf + nn + tlen);
    if (!c)
        return 0;
    char *p = (char *)(c + 1);
    c->ptr = code;
    c->filename = FIELD(code, l->co_filename);
    c->name = FIELD(code, l->co_name);
    c->linetable = FIELD(code, l->co_linetable);
    c->firstlineno = *(const int *)((const char *)code + l->co_firstlineno);
    c->minor = l->minor;
    c->file = memcpy(p, file, nf);
    c->func = memcpy(p + nf, func, nn);
    c->table = memcpy(p + nf + nn, table, tlen);
    c->table_len = tlen;
    uint32_t id = atomic_fetch_add_explicit(&ncodes, 1, memory_order_relaxed) + 1;
    if (id > CODE_CAP) {
        free(c);
        return 0;
    }
    atomic_store_explicit(&codes[id], c, memory_order_release);
    return id;
}

uint32_t mh__code_id(const struct mh__python *py, const void *code)
{
    const struct mh__pylayout *l = py->layout;
    uint32_t h = hash_ptr(code);
    for (uint32_t probe = 0; probe < CODE_SLOTS; probe++, h = (h + 1) & (CODE_SLOTS - 1)) {
        uint32_t id = atomic_load_explicit(&slots[h], memory_order_acquire);
        if (id == 0) {
            uint32_t nid = copy_code(py, code);
            if (!nid)
                return 0;
            if (atomic_compare_exchange_strong(&slots[h], &id, nid))
                return nid;
            /* another thread filled the slot first: `id` is its entry */
        }
        const struct mh__code *c = atomic_load_explicit(&codes[id], memory_order_acquire);
        if (!c || c->ptr != code)
            continue;
        if (same_object(l, c, code))
            return id;
        uint32_t nid = copy_code(py, code); /* the address now holds another object */
        if (nid)
            atomic_compare_exchange_strong(&slots[h], &id, nid);
        return nid;
    }
    return 0;
}

const struct mh__code *mh__code_get(uint32_t id)
{
    if (id == 0 || id > CODE_CAP)
        return NULL;
    return atomic_load_explicit(&codes[id], memory_order_acquire);
}
