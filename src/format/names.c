/* names.c - error messages, version getters and the names of event kinds,
 * phases and memory kinds. Part of libmemhist; every layer uses these names,
 * and the file format stores event kinds by number, never by name. */
#include <string.h>

#include "memhist/error.h"
#include "memhist/event.h"
#include "memhist/version.h"

unsigned mh_version(void)
{
    return (MH_VERSION_MAJOR << 16) | (MH_VERSION_MINOR << 8) | MH_VERSION_PATCH;
}

const char *mh_version_string(void)
{
    return MH_VERSION_STRING;
}

const char *mh_strerror(int code)
{
    switch (code) {
#define MH__X_MSG(name, value, msg) \
    case value:                    \
        return msg;
        MH_ERROR_LIST(MH__X_MSG)
#undef MH__X_MSG
    }
    return "unknown error";
}

static const char *const kind_names[MH_EV_KIND_COUNT] = {
#define MH__X_NAME(name, value, text) [value] = text,
    MH_EVENT_KIND_LIST(MH__X_NAME)
#undef MH__X_NAME
};

const char *mh_event_kind_name(unsigned kind)
{
    return kind < MH_EV_KIND_COUNT ? kind_names[kind] : "unknown";
}

int mh_event_kind_from_name(const char *name)
{
    for (unsigned k = 0; name && k < MH_EV_KIND_COUNT; k++)
        if (strcmp(kind_names[k], name) == 0)
            return (int)k;
    return -1;
}

const char *mh_phase_name(unsigned phase)
{
    static const char *const names[MH_PHASE_COUNT] = {"none", "forward", "backward", "optimizer"};
    return phase < MH_PHASE_COUNT ? names[phase] : "unknown";
}

const char *mh_memory_kind_name(unsigned kind)
{
    static const char *const names[] = {"unknown", "pageable", "pinned",         "device",
                                        "array",   "managed",  "device_static", "managed_static",
                                        "vmm"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}
