/* consumer.c - a program outside the memhist tree that uses an installed
 * libmemhist (tests/package/test_install.py builds it with find_package and
 * with pkg-config): records two allocations and a free to the file given.
 *
 * usage: consumer OUT.memhist */
#include <stdio.h>

#include <memhist/memhist.h>

int main(int argc, char **argv)
{
    struct mh_recorder *rec;
    if (argc != 2) {
        fprintf(stderr, "usage: consumer OUT.memhist\n");
        return 2;
    }
    int rc = mh_recorder_open(argv[1], NULL, &rec);
    if (rc < 0) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], mh_strerror(rc));
        return 1;
    }
    uint32_t frame = (uint32_t)mh_intern_frame(rec, "consumer.c", "main", 27);
    uint32_t stack = (uint32_t)mh_intern_stack(rec, &frame, 1);
    uint64_t mib = 1024 * 1024;
    struct mh_event seg = {.kind = MH_EV_SEGMENT_ALLOC, .time_ns = mh_clock_ns(), .addr = 1 << 30,
                           .size = 2 * mib, .thread = mh_thread_id()};
    mh_emit(rec, &seg);
    for (uint64_t i = 0; i < 2; i++) {
        struct mh_event ev = {.kind = MH_EV_ALLOC, .time_ns = mh_clock_ns(), .addr = (1 << 30) + i * mib,
                              .size = mib, .stack = stack, .thread = mh_thread_id()};
        mh_emit(rec, &ev);
    }
    struct mh_event fr = {.kind = MH_EV_FREE_REQUESTED, .time_ns = mh_clock_ns(), .addr = 1 << 30,
                          .size = mib, .stack = stack, .thread = mh_thread_id()};
    mh_emit(rec, &fr);
    rc = mh_recorder_close(rec);
    if (rc < 0) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], mh_strerror(rc));
        return 1;
    }
    printf("consumer: libmemhist %s wrote %s\n", mh_version_string(), argv[1]);
    return 0;
}
