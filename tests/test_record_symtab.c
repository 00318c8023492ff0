/* test_record_symtab.c - naming native return addresses from the loaded
 * modules' own symbol tables (src/record/symtab.c), as `--stacks all` does
 * on the drain thread: exported and file-local functions of this program,
 * a function of the C library, addresses no module holds, tables read ahead
 * by file name (as the torch bridge does for torch's libraries). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symtab.h"

__attribute__((noinline)) int symtab_probe_exported(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) static int symtab_probe_local(int x)
{
    return x * 5 + 2;
}

struct named {
    int rc;
    char file[512], func[1024];
    uint32_t line;
};

static struct named name_of(uintptr_t ip)
{
    struct named n = {0};
    n.rc = mh__symtab_name(NULL, ip, n.file, sizeof n.file, n.func, sizeof n.func, &n.line);
    return n;
}

Test(symtab, functions_of_this_program_are_named_with_their_module)
{
    cr_assert_eq(symtab_probe_exported(1) + symtab_probe_local(1), 11);
    struct named a = name_of((uintptr_t)&symtab_probe_exported + 4);
    cr_assert_eq(a.rc, 0);
    cr_assert_str_eq(a.func, "symtab_probe_exported");
    cr_assert(strstr(a.file, "test_record_symtab"), "module %s", a.file);
    struct named b = name_of((uintptr_t)&symtab_probe_local + 4);
    cr_assert_eq(b.rc, 0);
    cr_assert_str_eq(b.func, "symtab_probe_local", "a file-local function is named from .symtab");
    cr_assert_neq(a.line, b.line, "the line is the offset in the module");
}

Test(symtab, a_library_function_is_named_and_names_are_kept_across_a_reset)
{
    /* getpid: a libc function the sanitizers do not intercept */
    struct named q = name_of((uintptr_t)&getpid + 2);
    cr_assert_eq(q.rc, 0);
    cr_assert(strstr(q.func, "getpid"), "function %s", q.func);
    cr_assert(strstr(q.file, "libc"), "module %s", q.file);
    mh__symtab_reset();
    struct named again = name_of((uintptr_t)&getpid + 2);
    cr_assert_str_eq(again.func, q.func);
    cr_assert_eq(again.line, q.line);
}

Test(symtab, tables_are_read_ahead_by_file_name_once)
{
    static const char *const libc[] = {"libc.so", "libc-", NULL};
    static const char *const none[] = {"no-such-library", NULL};
    cr_assert_eq(mh__symtab_preload(none), 0);
    cr_assert_eq(mh__symtab_preload(libc), 1, "the C library's table is read");
    cr_assert_eq(mh__symtab_preload(libc), 0, "and only once");
    struct named q = name_of((uintptr_t)&getpid + 2);
    cr_assert_eq(q.rc, 0);
    cr_assert(strstr(q.func, "getpid"), "function %s", q.func);
}

Test(symtab, an_address_outside_every_module_is_refused)
{
    cr_assert_eq(name_of(16).rc, -1);
    cr_assert_eq(name_of(0).rc, -1);
    int on_stack = 0;
    cr_assert_eq(name_of((uintptr_t)&on_stack).rc, -1, "the stack is no module's code");
}
