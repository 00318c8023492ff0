/* symtab.c - native address -> (module, function symbol, offset) from the
 * loaded modules' ELF symbol tables (symtab.h), for `--stacks all`.
 *
 * Runs on the drain thread only (the resolver's lock). Modules are found
 * with dl_iterate_phdr; a module's file is mapped read-only on its first
 * lookup and its function symbols (.symtab, which also names local and
 * anonymous-namespace functions; .dynsym when stripped) are sorted by
 * address once, so each later address costs a binary search. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symtab.h"

#define MAX_RANGES 8

struct sym {
    uintptr_t addr, size;
    const char *name;
};

struct module {
    char *path;
    uintptr_t bias;
    uintptr_t lo[MAX_RANGES], hi[MAX_RANGES];
    int nranges;
    int loaded; /* symbols read (or tried) */
    struct sym *syms;
    size_t nsyms;
    void *map;
    size_t map_len;
};

static struct module *mods;
static size_t nmods, capmods;

static int sym_cmp(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The section table's symbol table of `type` with its string table, if
 * both lie inside the file. */
static const Elf64_Shdr *find_table(const char *base, size_t len, const Elf64_Ehdr *eh,
                                    uint32_t type, const Elf64_Shdr **strs)
{
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != type || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size <= len && st->sh_offset + st->sh_size <= len &&
            sh[i].sh_entsize == sizeof(Elf64_Sym)) {
            *strs = st;
            return &sh[i];
        }
    }
    return NULL;
}

static int read_symbols(struct module *m, const char *base, size_t len)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len)
        return -1;
    const Elf64_Shdr *strs = NULL, *tab = find_table(base, len, eh, SHT_SYMTAB, &strs);
    if (!tab)
        tab = find_table(base, len, eh, SHT_DYNSYM, &strs);
    if (!tab)
        return -1;
    const Elf64_Sym *s = (const Elf64_Sym *)(base + tab->sh_offset);
    size_t n = tab->sh_size / sizeof *s, k = 0;
    m->syms = malloc(sizeof *m->syms * (n ? n : 1));
    if (!m->syms)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int type = ELF64_ST_TYPE(s[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s[i].st_shndx == SHN_UNDEF ||
            !s[i].st_value || s[i].st_name >= strs->sh_size)
            continue;
        uintptr_t addr = (eh->e_type == ET_DYN ? m->bias : 0) + s[i].st_value;
        m->syms[k++] = (struct sym){addr, s[i].st_size, base + strs->sh_offset + s[i].st_name};
    }
    qsort(m->syms, k, sizeof *m->syms, sym_cmp);
    m->nsyms = k;
    return 0;
}

/* Maps the module's file and reads its symbols, once. */
static void load(struct module *m)
{
    m->loaded = 1;
    int fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    void *map = fstat(fd, &st) == 0 && st.st_size > 0
                    ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                    : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED)
        return;
    m->map = map;
    m->map_len = (size_t)st.st_size;
    if (read_symbols(m, map, m->map_len) < 0) {
        free(m->syms);
        m->syms = NULL;
        m->nsyms = 0;
    }
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (size_t i = 0; i < nmods; i++)
        if (mods[i].bias == info->dlpi_addr && mods[i].nranges && info->dlpi_phnum)
            return 0; /* known */
    if (nmods == capmods) {
        size_t cap = capmods ? 2 * capmods : 64;
        struct module *m = realloc(mods, sizeof *m * cap);
        if (!m)
            return 1;
        mods = m;
        capmods = cap;
    }
    struct module m = {0};
    m.bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && m.nranges < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            m.lo[m.nranges] = info->dlpi_addr + ph->p_vaddr;
            m.hi[m.nranges++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
    if (!m.nranges)
        return 0;
    char exe[4096];
    const char *path = info->dlpi_name;
    if (!path || !*path) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        path = exe;
    }
    if (!(m.path = strdup(path)))
        return 1;
    mods[nmods++] = m;
    return 0;
}

static struct module *module_of(uintptr_t ip)
{
    for (size_t i = 0; i < nmods; i++)
        for (int r = 0; r < mods[i].nranges; r++)
            if (ip >= mods[i].lo[r] && ip < mods[i].hi[r])
                return &mods[i];
    return NULL;
}

int mh__symtab_lookup(uintptr_t ip, const char **module, const char **name, uintptr_t *offset)
{
    struct module *m = module_of(ip);
    if (!m) { /* loaded since the last look: learn the new modules */
        dl_iterate_phdr(add_module, NULL);
        if (!(m = module_of(ip)))
            return -1;
    }
    if (!m->loaded)
        load(m);
    *module = m->path;
    *offset = ip - m->bias;
    *name = NULL;
    size_t lo = 0, hi = m->nsyms; /* the last symbol starting at or before ip */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].addr <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        const struct sym *s = &m->syms[lo - 1];
        if (s->size == 0 || ip < s->addr + s->size)
            *name = s->name;
    }
    return 0;
}

size_t mh__symtab_preload(const char *const *prefixes)
{
    size_t read = 0;
    dl_iterate_phdr(add_module, NULL);
    for (size_t i = 0; i < nmods; i++) {
        const char *slash = strrchr(mods[i].path, '/');
        const char *file = slash ? slash + 1 : mods[i].path;
        for (const char *const *p = prefixes; *p && !mods[i].loaded; p++)
            if (!strncmp(file, *p, strlen(*p))) {
                load(&mods[i]);
                read++;
            }
    }
    return read;
}

/* ---- named addresses ------------------------------------------------------ */

struct named {
    uintptr_t ip; /* 0: empty slot */
    const char *module;
    char *func;
    uint32_t line;
};

static struct named *names;
static size_t names_cap, names_n;

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static char *demangled(const char *name)
{
    static int looked;
    static demangle_fn demangle;
    if (!looked) {
        looked = 1;
        demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    }
    int status = -1;
    char *d =
        demangle && name[0] == '_' && name[1] == 'Z' ? demangle(name, NULL, NULL, &status) : NULL;
    return d && status == 0 ? d : (free(d), strdup(name));
}

static struct named *slot_of(uintptr_t ip)
{
    size_t h = (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 20) & (names_cap - 1);
    while (names[h].ip && names[h].ip != ip)
        h = (h + 1) & (names_cap - 1);
    return &names[h];
}

static int grow_names(void)
{
    size_t old_cap = names_cap, cap = names_cap ? 2 * names_cap : 4096;
    struct named *old = names, *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    names = n;
    names_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].ip)
            *slot_of(old[i].ip) = old[i];
    free(old);
    return 0;
}

int mh__symtab_name(void *user, uintptr_t ip, char *file, size_t filecap, char *func,
                    size_t funccap, uint32_t *line)
{
    (void)user;
    if (!ip || ((names_n + 1) * 2 > names_cap && grow_names() < 0))
        return -1;
    struct named *s = slot_of(ip);
    if (!s->ip) {
        const char *module, *name;
        uintptr_t off;
        if (mh__symtab_lookup(ip, &module, &name, &off) < 0)
            return -1;
        char *f = name ? demangled(name) : NULL;
        *s = (struct named){ip, module, f, (uint32_t)off};
        names_n++;
    }
    snprintf(file, filecap, "%s", s->module);
    snprintf(func, funccap, "%s", s->func ? s->func : "??");
    *line = s->line;
    return 0;
}

void mh__symtab_reset(void)
{
    for (size_t i = 0; i < names_cap; i++)
        free(names[i].func);
    free(names);
    names = NULL;
    names_cap = names_n = 0;
    for (size_t i = 0; i < nmods; i++) {
        free(mods[i].path);
        free(mods[i].syms);
        if (mods[i].map)
            munmap(mods[i].map, mods[i].map_len);
    }
    free(mods);
    mods = NULL;
    nmods = capmods = 0;
}
