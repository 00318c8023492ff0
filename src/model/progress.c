/* progress.c - the default progress callback of the offline libraries (see
 * progress.h). */
#include <stddef.h>

#include "progress.h"

static struct mh__progress default_progress;

void mh__progress_set_default(const struct mh__progress *p)
{
    default_progress = p ? *p : (struct mh__progress){NULL, NULL};
}

struct mh__progress mh__progress_default(void)
{
    return default_progress;
}
