/* opname.c - short op names for the frame that names an allocation made
 * with no Python frame (torch_support.h, MH_TORCH_INTERNAL_FILE). The torch
 * bridge demangles the C++ type of the autograd node that made the
 * allocation on the drain thread and keeps only what people know the op by:
 * "torch::autograd::generated::MmBackward0" is "MmBackward0", as torch's
 * own grad_fn names it. Plain C, so it is tested without libtorch. */
#include <stdio.h>
#include <string.h>

#include "torch_support.h"

const char *mh__torch_op_short(const char *demangled, char *out, size_t cap)
{
    if (!out || cap == 0)
        return out;
    const char *s = demangled ? demangled : "";
    size_t end = strcspn(s, "<(");   /* template arguments, parameters */
    const char *start = s;
    for (size_t i = 0; i + 1 < end; i++)
        if (s[i] == ':' && s[i + 1] == ':')
            start = s + i + 2;
    size_t len = (size_t)(s + end - start);
    if (len == 0) { /* nothing left of the name: keep what we were given */
        start = s;
        len = strlen(s);
    }
    snprintf(out, cap, "%.*s", (int)(len < cap ? len : cap - 1), start);
    if (out[0] == '\0')
        snprintf(out, cap, "unknown op");
    return out;
}
