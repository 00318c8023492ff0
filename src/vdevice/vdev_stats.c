/* vdev_stats.c - what the virtual device saw of its memory, for the tool
 * that ran the program: per device the most memory in use at once (the
 * allocations, the virtual memory API's physical memory and the context),
 * how many allocations it refused for want of capacity, and how often the
 * program asked how much memory is free (before the first refusal, and
 * after it). Part of the stand-in libcuda.so.1:
 * vdev_memory.c counts, this file keeps the counts and, when the process
 * exits, appends them to the file named by MEMHIST_VDEVICE_STATS (one line
 * per device used, "pid P device D peak_used B refused N mem_info M
 * mem_info_after_refusal M2 capacity C"). `memhist fit` reads them: a run in which nothing was
 * refused and free memory was never read went exactly as it would have on
 * any device of the same kind with at least peak_used bytes, and until its
 * first refusal the program's requests were those it makes on any such
 * device. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vdev.h"

static _Atomic uint64_t peak[MH__VDEV_MAX_DEVICES];
static _Atomic uint64_t refused[MH__VDEV_MAX_DEVICES];
static _Atomic uint64_t info_calls[MH__VDEV_MAX_DEVICES];
static _Atomic uint64_t late_info_calls[MH__VDEV_MAX_DEVICES];

static int valid(int dev)
{
    return dev >= 0 && dev < MH__VDEV_MAX_DEVICES;
}

void mh__vdev_stats_in_use(int dev, uint64_t bytes)
{
    if (!valid(dev))
        return;
    uint64_t old = atomic_load(&peak[dev]);
    while (bytes > old && !atomic_compare_exchange_weak(&peak[dev], &old, bytes))
        ;
}

void mh__vdev_stats_refused(int dev)
{
    if (valid(dev))
        atomic_fetch_add(&refused[dev], 1);
}

/* Queries before and after the first refusal apart: torch asks how much is
 * free when it runs out (once per OOM, for its message), which is no choice
 * of the program's. */
void mh__vdev_stats_mem_info(int dev)
{
    if (valid(dev))
        atomic_fetch_add(atomic_load(&refused[dev]) ? &late_info_calls[dev] : &info_calls[dev], 1);
}

/* One write per line with O_APPEND, so the lines of processes that exit
 * at once do not interleave. */
__attribute__((destructor)) static void write_stats(void)
{
    const char *path = getenv("MEMHIST_VDEVICE_STATS");
    if (!path || !*path)
        return;
    int fd = -1;
    for (int d = 0; d < MH__VDEV_MAX_DEVICES; d++) {
        uint64_t p = atomic_load(&peak[d]), r = atomic_load(&refused[d]);
        uint64_t m = atomic_load(&info_calls[d]), late = atomic_load(&late_info_calls[d]);
        if (!p && !r && !m && !late)
            continue;
        if (fd < 0 && (fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0)
            return;
        char line[256];
        int n =
            snprintf(line, sizeof line,
                     "pid %d device %d peak_used %" PRIu64 " refused %" PRIu64 " mem_info %" PRIu64
                     " mem_info_after_refusal %" PRIu64 " capacity %" PRIu64 "\n",
                     (int)getpid(), d, p, r, m, late, mh__vdev_config()->capacity);
        if (n > 0 && write(fd, line, (size_t)n) < 0)
            break;
    }
    if (fd >= 0)
        close(fd);
}
