/* symtab.h - names native return addresses from the loaded modules' own
 * ELF symbol tables, for `--stacks all` (symtab.c). Internal to src/record.
 *
 * Data flow: the drain thread resolves a trie node (stackcap.c, called by
 * the torch bridge) and names each native address it has not named yet
 * with mh__symtab_name, which reads each module's .symtab (else
 * .dynsym) once, sorted by address, and answers by binary search: no
 * dladdr (a linear scan of the dynamic symbols, ~100 us per address in
 * libtorch_cpu), no GIL, no process spawned. */
#ifndef MH_RECORD_SYMTAB_H
#define MH_RECORD_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The module holding `ip` (its path) and the function symbol covering it
 * (its raw, mangled name; NULL when none covers it), and ip's offset from
 * the module's load address. Returns 0, or -1 when no loaded module holds
 * `ip`. The strings live until mh__symtab_reset. Not thread-safe: one
 * caller at a time (the resolver's lock). */
int mh__symtab_lookup(uintptr_t ip, const char **module, const char **name, uintptr_t *offset);
/* Reads ahead the symbols of every loaded module whose file name starts with
 * one of `prefixes` (NULL-terminated) and that were not read yet, so that
 * naming its first addresses costs no table read. Returns how many modules
 * it read. Same thread rule. */
size_t mh__symtab_preload(const char *const *prefixes);
/* Names `ip` for a recorded frame (an mh__native_namer; `user` unused): file = the module's path,
 * func = the demangled symbol (C++ names through the process's __cxa_demangle when it has one) or
 * "??", line = the offset in the module. Returns 0 or -1 (no module holds it). Remembers every
 * address it named. Same thread rule. */
int mh__symtab_name(void *user, uintptr_t ip, char *file, size_t filecap, char *func,
                    size_t funccap, uint32_t *line);
/* Forgets every module (their files are unmapped) and named address. */
void mh__symtab_reset(void);

#ifdef __cplusplus
}
#endif
#endif
