/* snapshot_int.h - internals of snapshot export shared by snapshot_build.c
 * (the replay that finds the window, in both passes), snapshot_category.c
 * (each entry's memory category), snapshot_estimate.c (the expected size,
 * counted as the entries go by), snapshot_fit.c (the default window) and
 * snapshot_write.c (pickle emission).
 *
 * Nothing here grows with the number of events except the category store,
 * half a byte per trace entry of the window (with max_entries, a ring of
 * that many): entries are kept only while a window's are few
 * (MH__KEEP_ENTRIES), and otherwise replayed again from the file when the
 * pickle is written. */
#ifndef MH_VIZ_SNAPSHOT_INT_H
#define MH_VIZ_SNAPSHOT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/model.h"
#include "snapshot_export.h"

/* Category codes of the store: enum mh__category, or none; bit 3 marks a
 * free entry (free_requested or free_completed). */
#define MH__SCAT_NONE 7u
#define MH__SCAT_FREE 8u

/* One trace entry or annotation, compact (the event plus step and phase). */
struct mh__sentry {
    uint64_t time_ns, addr, size, stream;
    uint64_t index; /* position of the event in the file (0 = first event) */
    uint32_t stack, str, str2;
    uint32_t pool[2];
    int64_t step;
    int16_t device;
    uint8_t kind, phase;
    uint8_t category; /* enum mh__category, or MH__SCAT_NONE */
};

/* Entries or step annotations: a growable array, or a ring of max_entries. */
struct mh__sring {
    struct mh__sentry *e;
    size_t len, cap, head; /* ring: oldest at head once len == cap */
    uint64_t seen;         /* annotations offered (kept or dropped) */
};

/* The category codes of one device's entries, two per byte, by position in
 * the window; with ring > 0 only the last `ring` positions are held. */
struct mh__catstore {
    uint8_t *nib;
    uint64_t cap;  /* positions the array holds */
    uint64_t ring; /* max_entries, 0 = every position */
};

/* Entries of a window kept by the first pass, all devices together, at most
 * (80 bytes each); a larger window is written from one more replay. */
#define MH__KEEP_ENTRIES (1u << 19)

/* The trace entries of one device in the window. */
struct mh__sdev {
    uint64_t seen; /* entries of the window (the last max_entries are written) */
    uint64_t base; /* store position of its first (after a narrowing pass) */
    struct mh__catstore cats;
    struct mh__sring kept; /* the entries themselves, while few */
};

/* What the entries of one step cost (the default window adds whole steps). */
struct mh__step_cost {
    int64_t step;
    uint64_t entries, bytes;
};

/* Every `stride`-th entry of the window: where it is, and the entries and
 * bytes before it (a time window around a moment, where steps do not do). */
struct mh__tsample {
    uint64_t rel_ns; /* time since the first event */
    uint64_t index;  /* its event's position in the file */
    uint64_t entries, bytes;
};

/* The user_metadata text of the last (step, phase, string) asked for:
 * consecutive entries mostly share it, and it is then not formatted again. */
struct mh__um_cache {
    uint64_t key[3];
    int have;
    size_t len;
    char text[512];
};

/* The running size estimate (snapshot_estimate.c). */
struct mh__est {
    unsigned char *stack_seen, *frame_seen;
    size_t stack_cap, frame_cap;
    uint64_t entry_bytes; /* the entries' own bytes */
    uint64_t dict_bytes;  /* stacks and frames written in full, once each */
    uint64_t memo;        /* memo indices handed out so far */
    struct mh__um_cache um;
    char last_um[512];    /* the last user_metadata written */
    int have_um;
};

/* Where the window replay stands (snapshot_build.c), reset every pass. */
struct mh__step_track {
    int after_end; /* after STEP_END(end_step), before the next step */
    int64_t end_step;
};

struct mh__build {
    struct mh__step_track st;
    uint64_t t0;
    uint64_t end_index; /* the first event past the window, once done */
    int have_t0, entered, done;
};

/* The default window's candidates (snapshot_fit.c): per device, its
 * allocated peak; the run's first OOM. */
struct mh__focus {
    int have_peak, have_oom;
    struct mh_peak peak; /* of peak_device */
    int peak_device;
    struct mh_oom_info oom;
};

struct mh__pw;

struct mh__snapshot {
    struct mh__session *ses;         /* replayed again when writing */
    const struct mh_reader *reader; /* the session's */
    struct mh_model *model;         /* the state at the end of the window */
    struct mh_model *window_model;  /* the first pass's, up to the window's end */
    struct mh__build build;
    struct mh__livecat *livecat; /* categories (snapshot_category.c) */
    struct mh__snapshot_opts opts;
    struct mh__snapshot_info info;
    const char *conf_text; /* meta alloc_conf ("" if none), borrowed from the reader */
    struct mh_alloc_conf conf;
    struct mh__sdev *dev; /* indexed by device */
    int ndev;
    struct mh__sring notes; /* step (and range) annotations */
    int keep_off;            /* entries are not kept (too many; or narrowed) */
    uint64_t kept_total;     /* entries kept, all devices */
    int export_ranges;       /* ranges came from an imported snapshot */
    uint64_t categorized;    /* entries given a category (snapshot_category.c) */
    int lend_device;         /* the entry written "unknown" in place of its category */
    uint64_t lend_pos;       /* (store position; lend_device -1: none) */
    int saw_steps;           /* the window has step markers */
    int derived_steps;       /* steps inferred on import (not written as "step N") */
    /* the entry the last event gave (snapshot_category.c tags allocations with it) */
    uint64_t last_index, last_pos;
    int16_t last_device;
    int have_last;
    /* sizes, counted in the first pass */
    struct mh__est est;
    struct mh__step_cost *steps;
    size_t nsteps, steps_cap;
    struct mh__tsample *samples;
    size_t nsamples, samples_cap;
    uint64_t stride, collected;
    uint64_t t0; /* time of the first event */
    struct mh__focus focus;
    /* the pass: counting, narrowing or writing the entries of `write_device` */
    int pass, write_device;
    uint64_t write_pos, write_from;
    void *wctx;
};

/* The code of a device's entry at window position `pos` (MH__SCAT_NONE when
 * it is not held). */
unsigned mh__catstore_get(const struct mh__catstore *c, uint64_t pos);
/* Sets the category bits of the code at `pos`, given that `seen` entries
 * have been stored; a position already out of the ring is left alone. */
void mh__catstore_set(struct mh__catstore *c, uint64_t pos, uint64_t seen, unsigned category);
/* Appends the code of position `pos` (== the count stored so far). */
int mh__catstore_add(struct mh__catstore *c, uint64_t pos, unsigned code);
const struct mh__sentry *mh__sring_at(const struct mh__sring *t, size_t i);
/* Registers the observer that gives the collected alloc and free entries
 * the category of their allocation during the same pass (see
 * snapshot_category.c); the observer registered before it collects them. */
int mh__snapshot_categorize(struct mh__snapshot *s, struct mh__session *ses);
/* Writes the key/value pairs of an imported snapshot's settings text (meta
 * "torch_allocator_settings") into the dict being built on `w`, leaving out
 * top-level keys for which skip(user, key) is non-zero (snapshot_settings.c).
 * Returns the number of top-level pairs written or MH_ENOMEM. */
int mh__snapshot_settings_write(struct mh__pw *w, const char *text,
                                int (*skip)(void *user, const char *key), void *user);
/* An entry's user_metadata: "step 3 backward", plus " | <metadata>" when
 * the event carries its own. Returns its length (0: none). */
size_t mh__snapshot_user_text(const struct mh__snapshot *s, const struct mh__sentry *e, char *buf,
                              size_t cap);
/* mh__snapshot_user_text through `c`; returns the text (its length in *len). */
const char *mh__snapshot_user_cached(const struct mh__snapshot *s, struct mh__um_cache *c,
                                     const struct mh__sentry *e, size_t *len);
/* Counts one entry of the window into the estimate, its step's cost and the
 * time samples (snapshot_estimate.c). Returns 0 or MH_ENOMEM. */
int mh__snapshot_count(struct mh__snapshot *s, const struct mh__sentry *e);
/* Estimated pickle bytes of the window, once the pass is over. */
uint64_t mh__snapshot_estimate(struct mh__snapshot *s);
void mh__snapshot_est_free(struct mh__est *e);
/* Which entries are written with a category (s->categorized, the lent
 * "unknown"), over the window's entries (snapshot_category.c). */
void mh__snapshot_settle(struct mh__snapshot *s);
/* A pass of the session that writes the window's entries of `device`
 * through mh__snapshot_write_entry (snapshot_build.c). */
int mh__snapshot_replay_device(struct mh__snapshot *s, int device);
/* Writes one trace entry of the pass that writes (snapshot_write.c). */
void mh__snapshot_write_entry(struct mh__snapshot *s, const struct mh__sentry *e);

#endif
