/* flame_folded.c - a flame tree as folded stacks (see flame_svg.h), the
 * text format of flamegraph.pl's stackcollapse scripts: one line per path,
 * frames joined with ';', then a space and the count (here bytes). */
#include <inttypes.h>

#include "flame_svg.h"

static int line(void *user, const char *stack, uint64_t bytes)
{
    return mh__sink_printf(user, "%s %" PRIu64 "\n", stack, bytes);
}

int mh__flame_folded_write(const struct mh__flame *f, struct mh__sink *out)
{
    int rc = mh__flame_fold(f, line, out);
    return rc ? rc : out->error;
}
