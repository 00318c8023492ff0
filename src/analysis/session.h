/* session.h - one replay session: a recording opened once and replayed
 * through the model, with observers registered on it.
 *
 * The session sits between src/format (the reader) and everything that reads
 * a recording: each analysis and each streaming output is an observer, a
 * small table of callbacks in the style of a tool callback table, that sees
 * every event right after the model applied it, with the model's state. A
 * pass replays the file from its first event into a fresh model; a later
 * pass rewinds the reader (no reopening), and a pass may stop after a given
 * event for "state at the peak" queries. The recorded allocator settings are
 * read here, in one place, with one policy: settings that do not parse are
 * reported as a warning and the defaults are used. Problems are reported
 * through diag.h, never printed. */
#ifndef MH_ANALYSIS_SESSION_H
#define MH_ANALYSIS_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/memhist.h"
#include "progress.h"

struct mh__session;

/* An observer. Every callback is optional; each returns 0 to go on or a
 * negative MH_E* code that ends the pass with that code. `event` may also
 * return 1 to end the pass early (for an output whose window has passed). */
struct mh__observer {
    const char *name;
    void *user;
    /* before the first event of a pass; the model is fresh */
    int (*begin)(void *user, struct mh__session *s);
    /* after mh_model_apply(model, ev, res) returned 0; mh__session_index
     * is the event's index in the file */
    int (*event)(void *user, struct mh__session *s, const struct mh_event *ev,
                 const struct mh_apply_result *res);
    /* after the last event of a pass (end, damage or stop point); the model
     * is finished and the summary is up to date */
    int (*end)(void *user, struct mh__session *s);
};

/* Opens `path` ("-" = stdin) and reads the allocator settings. Reports a
 * one-line error naming the file through diag.h on failure (returns < 0). */
int mh__session_open(const char *path, struct mh__session **out);
/* As mh__session_open on `len` bytes at `data` (borrowed until close);
 * `name` names it in messages. */
int mh__session_open_mem(const void *data, size_t len, const char *name, struct mh__session **out);
void mh__session_close(struct mh__session *s);

/* Registers an observer (copied) for the following passes; at most 16. */
int mh__session_observe(struct mh__session *s, const struct mh__observer *o);
/* Unregisters every observer. */
void mh__session_forget(struct mh__session *s);

/* Where the session reports how far each pass has read (progress.h; the
 * name is "reading PATH", "reading PATH (pass N)"; bytes of the file; for
 * standard input the size is unknown). A
 * session starts with the default progress callback (mh__progress_default);
 * NULL turns reports off. */
void mh__session_set_progress(struct mh__session *s, const struct mh__progress *p);

/* One pass: rewinds if this is not the first, replays the first
 * `stop_after` events (every event if 0) into a fresh session model and
 * calls the observers. A damaged file replays up to the damage, reports a
 * warning (once per session) and returns 0. Returns < 0 on an error
 * (reported through diag.h naming the file) or an observer's code; rewinding
 * a pipe gives MH_EUNSUPPORTED. */
int mh__session_run(struct mh__session *s, uint64_t stop_after);

/* For the next pass only: fn is called with each event before the model
 * applies it (at index mh__session_index); a non-zero return makes that a
 * stop point, the event not applied, so the pass's model is the state
 * before it (an output that finds where its window ends only when it sees
 * the first event past it). */
void mh__session_stop_before(struct mh__session *s,
                             int (*fn)(void *user, struct mh__session *s, const struct mh_event *ev),
                             void *user);

/* One full pass (mh__session_run) with `o` added to the registered
 * observers for this pass only. */
int mh__session_pass(struct mh__session *s, const struct mh__observer *o);

/* The allocator state after the first `n` events, in a model the caller
 * frees; the session's model and observers are left alone. */
int mh__session_state_at(struct mh__session *s, uint64_t n, struct mh_model **out);

/* Whether the input can be read again by another reader: a regular file
 * or memory, not standard input or a pipe. */
int mh__session_rereadable(const struct mh__session *s);
/* Another reader on the session's input, before its first event (the file
 * opened again by its path, the memory read again), for work that reads the
 * recording alongside the session, on other threads too (the what-if
 * replays). MH_EUNSUPPORTED where the input cannot be read again. */
int mh__session_reader_again(const struct mh__session *s, struct mh_reader **out);

const char *mh__session_path(const struct mh__session *s);
const struct mh_reader *mh__session_reader(const struct mh__session *s);
/* The model of the last pass (NULL before the first). */
struct mh_model *mh__session_model(const struct mh__session *s);
/* Hands the model of the last pass to the caller (who frees it); the
 * session's next pass makes a new one. */
struct mh_model *mh__session_take_model(struct mh__session *s);
/* The recorded allocator settings (defaults where the file has none; read
 * from the metadata seen so far if no pass was made). */
const struct mh_alloc_conf *mh__session_conf(struct mh__session *s);
/* Index in the file of the event being observed. */
uint64_t mh__session_index(const struct mh__session *s);
/* Negative reader code if the last pass stopped on damage, else 0. */
int mh__session_read_error(const struct mh__session *s);
/* Passes made over the file so far. */
unsigned mh__session_passes(const struct mh__session *s);

/* Reads every event without the model or the observers, for the reader's
 * summary (`memhist info`); returns 0 or the reader's error, not reported. */
int mh__session_skim(struct mh__session *s);

/* What the file says about `device` (name "" and capacity 0 if nothing). */
void mh__device_info(const struct mh_reader *r, int device, struct mh_device_info *out);

#endif
