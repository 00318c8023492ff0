/* view_int.h - the parts of `memhist view`'s writer (view_html.h) shared
 * between its files: the page's string table, the timeline pass and the
 * moments' flame trees, each writing its share of one recording's JSON. */
#ifndef MH_VIZ_VIEW_INT_H
#define MH_VIZ_VIEW_INT_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "memhist/reader.h"
#include "view_html.h"

struct mh__analysis;

/* ---- strings: each distinct text written once, referred to by index ---- */
struct mh__vstr {
    char **text;
    size_t n, cap;
    uint32_t *slot; /* open addressing: index + 1, 0 empty */
    size_t nslot;
    uint32_t *stack_label; /* stack id -> label index + 1 (mh__stack_label), 0 unknown */
    size_t nstack;
    int error;
};
void mh__vstr_init(struct mh__vstr *s);
void mh__vstr_free(struct mh__vstr *s);
/* Index of `text` (NULL reads ""), added if new; 0 with s->error set when
 * out of memory. */
uint32_t mh__vstr_id(struct mh__vstr *s, const char *text);
/* Index of the label of `stack` (stacks.h: mh__stack_label), cached. */
uint32_t mh__vstr_stack(struct mh__vstr *s, const struct mh_reader *r, uint32_t stack);
/* The table as a JSON array of strings. */
void mh__vstr_json(const struct mh__vstr *s, struct mh__json *j);
/* A stack as a list of [display path, line, function, full path] index
 * quadruples, innermost frame first (stacks.h: mh__display_path). */
void mh__vstr_frames(struct mh__vstr *s, struct mh__json *j, const struct mh_reader *r,
                     uint32_t stack);

/* ---- the timeline: one streaming pass over the file -------------------- */
/* Per device of the analysis: min/max allocated and reserved per bucket of
 * events at two levels of detail, each step's first and last event, and the
 * raw allocator events of chosen steps (the allocated peak's, each OOM's,
 * then the first ones) up to the limits. The pass may be one another
 * analysis makes (the layers'), seen through the observer. Writes the
 * "timeline" and "events" keys of a device object (mh__vt_device_json). */
struct mh__vt;
struct mh__observer;
int mh__vt_new(const struct mh__analysis *a, const struct mh__view_opts *o, struct mh__vt **out);
/* Its session observer, to ride another full pass of the analysis's session
 * (registered with mh__session_observe); each pass starts it afresh. */
const struct mh__observer *mh__vt_observer(struct mh__vt *t);
/* Whether a pass it observed ended. */
int mh__vt_observed(const struct mh__vt *t);
/* A pass of its own. */
int mh__vt_pass(const struct mh__analysis *a, struct mh__vt *t);
void mh__vt_free(struct mh__vt *t);
void mh__vt_device_json(const struct mh__vt *t, int device, struct mh__json *j, struct mh__vstr *s,
                        const struct mh_reader *r);

/* ---- moments: what is live at a bounded set of event indices ----------- */
/* The indices per device (its allocated peak, its OOMs, each step's peak as
 * the first pass found them, evenly spaced samples), their records gathered
 * by an observer riding another full pass of the session (or by a pass of
 * their own), each written as flame trees by module and by stack. */
struct mh__vmoments;
int mh__vmoments_new(const struct mh__analysis *a, const struct mh__view_opts *o,
                     struct mh__vmoments **out);
void mh__vmoments_free(struct mh__vmoments *m);
/* The observer to register for a full pass (NULL when there is no moment). */
const struct mh__observer *mh__vmoments_observer(const struct mh__vmoments *m);
/* After that pass (`rode`: it ended), or in a pass of its own (rode 0). */
int mh__vmoments_complete(const struct mh__analysis *a, struct mh__vmoments *m, int rode);
/* Writes the device's "moments" array and "step_moments_dropped" count. */
int mh__vmoments_json(const struct mh__vmoments *m, int device, struct mh__json *j,
                      struct mh__vstr *s, const struct mh__view_opts *o);

/* ---- one device's answers (view_device.c, view_answers.c) -------------- */
struct mh__vdev {
    const struct mh__analysis *a;
    const struct mh_reader *r;
    struct mh__vstr *s;
    const struct mh__view_opts *o;
};
struct mh__device_report;
struct mh__layers_answer;
struct mh__oom_cases;
struct mh__oom_case;
/* The device's report, layers answer (`la` may be NULL) and OOM cases
 * (`cs` may be NULL) as keys of the device object being written. */
void mh__vdev_json(struct mh__json *j, struct mh__vdev *v, const struct mh__device_report *d,
                   const struct mh__layers_answer *la, const struct mh__oom_cases *cs);
void mh__vdev_oom_case(struct mh__json *j, struct mh__vdev *v, const struct mh__oom_case *c);
void mh__vdev_layers(struct mh__json *j, const struct mh__layers_answer *la);

/* The JSON of a part (borrowed), for the page writer. */
const char *mh__view_part_json(const struct mh__view_part *p, size_t *len);

/* ---- the page's template (view.css, view.js, embedded at build time) ---- */
extern const char mh__view_css[];
extern const char mh__view_js[];

#endif
