/* consumer.c - a program outside the memhist tree that uses an installed
 * libmemhist (tests/package/test_install.py builds it with find_package and
 * with pkg-config): records two allocations and a free to the file given,
 * then reads the file back and replays it through the allocator model
 * (memhist/model.h) and prints the peak allocated bytes it finds.
 *
 * usage: consumer OUT.memhist */
#include <stdio.h>

#include <memhist/memhist.h>

/* Replays `path` through the model; prints its peak allocated bytes. */
static int replay(const char *path)
{
    struct mh_reader *r;
    struct mh_model *m = NULL;
    struct mh_event ev;
    struct mh_peak peak;
    int rc = mh_reader_open(path, &r);
    if (rc < 0)
        return rc;
    rc = mh_model_new(NULL, &m);
    while (rc == 0 && (rc = mh_reader_next(r, &ev)) == 1)
        rc = mh_model_apply(m, &ev, NULL);
    if (rc == 0) {
        mh_model_finish(m);
        rc = mh_model_peak_allocated(m, 0, &peak);
    }
    if (rc == 0)
        printf("consumer: model replay: %llu events, peak allocated %llu bytes\n",
               (unsigned long long)mh_model_event_count(m), (unsigned long long)peak.value);
    mh_model_free(m);
    mh_reader_close(r);
    return rc;
}

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
    struct mh_event seg = {.kind = MH_EV_SEGMENT_ALLOC,
                           .time_ns = mh_clock_ns(),
                           .addr = 1 << 30,
                           .size = 2 * mib,
                           .thread = mh_thread_id()};
    mh_emit(rec, &seg);
    for (uint64_t i = 0; i < 2; i++) {
        struct mh_event ev = {.kind = MH_EV_ALLOC,
                              .time_ns = mh_clock_ns(),
                              .addr = (1 << 30) + i * mib,
                              .size = mib,
                              .stack = stack,
                              .thread = mh_thread_id()};
        mh_emit(rec, &ev);
    }
    struct mh_event fr = {.kind = MH_EV_FREE_REQUESTED,
                          .time_ns = mh_clock_ns(),
                          .addr = 1 << 30,
                          .size = mib,
                          .stack = stack,
                          .thread = mh_thread_id()};
    mh_emit(rec, &fr);
    rc = mh_recorder_close(rec);
    if (rc < 0) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], mh_strerror(rc));
        return 1;
    }
    printf("consumer: libmemhist %s wrote %s\n", mh_version_string(), argv[1]);
    if ((rc = replay(argv[1])) < 0) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], mh_strerror(rc));
        return 1;
    }
    return 0;
}
