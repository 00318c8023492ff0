/* snapshot_int.h - internals of snapshot export shared by snapshot_build.c
 * (replay and collection of the window) and snapshot_write.c (pickle
 * emission). */
#ifndef MH_VIZ_SNAPSHOT_INT_H
#define MH_VIZ_SNAPSHOT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "snapshot_export.h"

/* No category on an entry (the "category" key is left out). */
#define MH__SCAT_NONE 0xFF

/* One trace entry or annotation, compact (the event plus step and phase). */
struct mh__sentry {
    uint64_t time_ns, addr, size, stream;
    uint64_t index; /* position of the event in the file (0 = first event) */
    uint32_t stack, str, str2;
    uint32_t pool[2];
    int64_t step;
    int16_t device;
    uint8_t kind, phase;
    uint8_t category; /* enum mh_category or MH__SCAT_NONE */
};

/* Entries of one device: a growable array, or a ring of max_entries. */
struct mh__strace {
    struct mh__sentry *e;
    size_t len, cap, head; /* ring: oldest at head once len == cap */
    uint64_t seen;         /* entries offered (kept or dropped) */
};

/* Where the window replay stands (snapshot_build.c). */
struct mh__step_track {
    int after_end; /* after STEP_END(end_step), before the next step */
    int64_t end_step;
};

struct mh__build {
    struct mh__step_track st;
    uint64_t t0;
    int have_t0, entered, done;
};

struct mh_snapshot {
    const struct mh_reader *reader; /* the session's */
    struct mh_model *model;         /* the state at the end of the window */
    struct mh__build build;
    struct mh_livecat *livecat;     /* categories (snapshot_category.c) */
    struct mh_snapshot_opts opts;
    struct mh_snapshot_info info;
    const char *conf_text; /* meta alloc_conf ("" if none), borrowed from the reader */
    struct mh_alloc_conf conf;
    struct mh__strace *dev; /* indexed by device */
    int ndev;
    struct mh__strace notes; /* step (and range) annotations */
    int export_ranges;       /* ranges came from an imported snapshot */
    uint64_t categorized;    /* entries given a category (snapshot_category.c) */
    int saw_steps;           /* the window has step markers */
    int derived_steps;       /* steps inferred on import (not written as "step N") */
};

/* Entry i (oldest first) of a trace. */
const struct mh__sentry *mh__strace_at(const struct mh__strace *t, size_t i);
/* Registers the observer that gives the collected alloc and free entries
 * the category of their allocation during the same pass (see
 * snapshot_category.c); the observer registered before it collects them. */
int mh__snapshot_categorize(struct mh_snapshot *s, struct mh_session *ses);
/* Writes the key/value pairs of an imported snapshot's settings text (meta
 * "torch_allocator_settings") into the dict being built on `w`, leaving out
 * top-level keys for which skip(user, key) is non-zero (snapshot_settings.c).
 * Returns the number of top-level pairs written or MH_ENOMEM. */
struct mh_pw;
int mh__snapshot_settings_write(struct mh_pw *w, const char *text,
                                int (*skip)(void *user, const char *key), void *user);
/* An entry's user_metadata: "step 3 backward", plus " | <metadata>" when
 * the event carries its own. Returns its length (0: none). */
size_t mh__snapshot_user_text(const struct mh_snapshot *s, const struct mh__sentry *e, char *buf,
                              size_t cap);
/* Estimated pickle bytes of the collected content. */
uint64_t mh__snapshot_estimate(const struct mh_snapshot *s);

#endif
