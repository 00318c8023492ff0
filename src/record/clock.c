/* clock.c - the recorder's clock and thread ids. CLOCK_REALTIME is read
 * through the vDSO (no system call); the thread id is fetched once per thread
 * and cached. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "memhist/recorder.h"

uint64_t mh_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t mh_thread_id(void)
{
    static _Thread_local uint32_t tid;
    if (!tid)
        tid = (uint32_t)syscall(SYS_gettid);
    return tid;
}
