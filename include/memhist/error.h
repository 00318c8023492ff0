/* memhist/error.h - the one list of error codes.
 *
 * Every fallible memhist call returns an int: 0 (or a count) on success and a
 * negative MH_E* code on failure. MH_ERROR_LIST is the single source of truth:
 * it generates the enum here and the messages of mh_strerror(). */
#ifndef MEMHIST_ERROR_H
#define MEMHIST_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message) */
#define MH_ERROR_LIST(X)                                                                           \
    X(MH_OK, 0, "success")                                                                         \
    X(MH_EINVAL, -1, "invalid argument")                                                           \
    X(MH_ENOMEM, -2, "out of memory")                                                              \
    X(MH_EIO, -3, "input/output error")                                                            \
    X(MH_EFORMAT, -4, "malformed data")                                                            \
    X(MH_ETRUNCATED, -5, "data ends early")                                                        \
    X(MH_EVERSION, -6, "unsupported format version")                                               \
    X(MH_ENOTFOUND, -7, "not found")                                                               \
    X(MH_ESTATE, -8, "operation not valid in the current state")                                   \
    X(MH_EFULL, -9, "buffer full")                                                                 \
    X(MH_EUNSUPPORTED, -10, "not supported")                                                       \
    X(MH_EUNSAFE, -11, "refused: the input asks to import or call code")                           \
    X(MH_ELIMIT, -12, "input exceeds a limit")                                                     \
    X(MH_ECONFIG, -13, "invalid allocator setting")                                                \
    X(MH_EUNAVAILABLE, -14, "facility unavailable on this machine")                                \
    X(MH_EOOM_SIM, -15, "simulated device out of memory")

enum mh_error {
#define MH_X_ENUM(name, value, msg) name = value,
    MH_ERROR_LIST(MH_X_ENUM)
#undef MH_X_ENUM
};

/* Message for an error code; never NULL ("unknown error" for unknown codes). */
const char *mh_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
