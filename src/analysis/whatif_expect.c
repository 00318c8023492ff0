/* whatif_expect.c - the replay a command will ask for first, started during
 * the session's pass (see whatif_check.h, mh__whatif_source_expect): at
 * the file's first allocator event the input is known as it will be after
 * the pass unless later events change it (another device allocates, the
 * device's size is defined later), so the replay runs on a thread of its
 * own, reading the file to its end, while the pass goes on. Its result is
 * taken only for the same replay of the same input, when the file has not
 * changed (same size, time and inode) and the replay read exactly the
 * events the pass saw; anything else runs the replay again. Owns the
 * thread and its results. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "whatif_int.h"

struct mh__wexpect {
    pthread_t tid;
    pthread_mutex_t mu;
    int taken, joined;
    struct mh__whatif_input in;
    struct mh__sim_replay_opts ro;
    int baseline;
    struct mh__whatif_outcome out;
    struct mh__sim_replay_result res;
    int rc;
    _Atomic int cancel;
    _Atomic int pass_over;  /* the pass ended: the replay's progress is shown */
    struct mh__progress fwd; /* where it is shown */
    int stat_rc;            /* the file when the replay started */
    struct stat st;
};

void mh__whatif_source_expect(struct mh__whatif_source *w, mh__whatif_expect_fn fn, void *user)
{
    w->expect_fn = fn;
    w->expect_user = user;
}

/* The replay's progress, held back while the pass shows its own: pieces of
 * work running at once share one line, whose percentage must not fall
 * back when one of them ends. */
static void progress(void *user, const char *what, uint64_t done, uint64_t total)
{
    struct mh__wexpect *e = user;
    if (atomic_load_explicit(&e->pass_over, memory_order_relaxed))
        mh__progress_report(&e->fwd, what, done, total);
}

static void *run(void *arg)
{
    struct mh__wexpect *e = arg;
    e->rc = mh__whatif_replay_now(&e->in, &e->ro, e->baseline, &e->out, &e->res);
    return NULL;
}

/* The first allocator device's input as the pass has seen it so far. */
static void input_so_far(struct mh__whatif_source *w, struct mh__session *s,
                         struct mh__whatif_input *in)
{
    struct mh_device_info d;
    memset(in, 0, sizeof *in);
    in->src = w;
    in->events = UINT64_MAX;
    in->device = w->first_device;
    in->conf = *mh__session_conf(s);
    mh__device_info(mh__session_reader(s), in->device, &d);
    in->total_bytes = d.total_bytes;
    in->t0_ns = w->t0_ns;
}

void mh__wexpect_start(struct mh__whatif_source *w, struct mh__session *s)
{
    if (!w->expect_fn || w->copy || w->expect)
        return;
    struct mh__wexpect *e = calloc(1, sizeof *e);
    if (!e || pthread_mutex_init(&e->mu, NULL) != 0) {
        free(e);
        return;
    }
    input_so_far(w, s, &e->in);
    w->expect_fn(w->expect_user, &e->in, NULL, &e->ro, &e->baseline);
    e->fwd = mh__progress_default();
    if (e->fwd.fn)
        e->ro.progress = (struct mh__progress){progress, e};
    e->stat_rc = stat(mh__session_path(s), &e->st);
    w->expect = e;
    if (pthread_create(&e->tid, NULL, run, e) != 0) {
        w->expect = NULL;
        pthread_mutex_destroy(&e->mu);
        free(e);
    }
}

const _Atomic int *mh__wexpect_cancel(const struct mh__whatif_source *w)
{
    return w->expect ? &w->expect->cancel : NULL;
}

void mh__wexpect_stop(struct mh__whatif_source *w)
{
    struct mh__wexpect *e = w->expect;
    if (!e)
        return;
    atomic_store(&e->cancel, 1);
    if (!e->joined)
        pthread_join(e->tid, NULL);
    pthread_mutex_destroy(&e->mu);
    free(e);
    w->expect = NULL;
}

static int same_conf(const struct mh_alloc_conf *a, const struct mh_alloc_conf *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* The replay asked for is the one started. */
static int same_replay(const struct mh__wexpect *e, const struct mh__whatif_input *in,
                       const struct mh__sim_replay_opts *ro, int baseline)
{
    const struct mh__sim_replay_opts *x = &e->ro;
    return in->device == e->in.device && in->total_bytes == e->in.total_bytes &&
           in->t0_ns == e->in.t0_ns && same_conf(&in->conf, &e->in.conf) &&
           baseline == e->baseline && same_conf(&ro->conf, &x->conf) &&
           ro->capacity == x->capacity && ro->use_oracle == x->use_oracle &&
           ro->address_ties == x->address_ties && ro->compare_window == x->compare_window;
}

void mh__wexpect_check(struct mh__whatif_source *w, struct mh__session *s)
{
    struct mh__wexpect *e = w->expect;
    struct mh__whatif_input in;
    struct mh__sim_replay_opts ro;
    int baseline;
    if (!e)
        return;
    atomic_store(&e->pass_over, 1);
    if (w->other_device) /* the recorded run is not known yet: the replay decides */
        return;
    input_so_far(w, s, &in);
    memset(&ro, 0, sizeof ro);
    w->expect_fn(w->expect_user, &in, &w->recorded, &ro, &baseline);
    if (!same_replay(e, &in, &ro, baseline))
        atomic_store(&e->cancel, 1);
}

/* The replay read what the pass read: the file unchanged, every event of
 * the first device's input. */
static int read_the_same(const struct mh__wexpect *e, const struct mh__whatif_input *in)
{
    const struct mh__whatif_source *w = in->src;
    struct stat st;
    int rc = stat(mh__session_path(w->s), &st);
    if (rc != e->stat_rc ||
        (rc == 0 && (st.st_size != e->st.st_size || st.st_ino != e->st.st_ino ||
                     st.st_dev != e->st.st_dev || st.st_mtim.tv_sec != e->st.st_mtim.tv_sec ||
                     st.st_mtim.tv_nsec != e->st.st_mtim.tv_nsec)))
        return 0;
    return w->done && e->res.input_events == w->events - w->other_alloc;
}

int mh__wexpect_take(const struct mh__whatif_input *in, const struct mh__sim_replay_opts *ro,
                     int baseline, struct mh__whatif_outcome *out, struct mh__sim_replay_result *res)
{
    struct mh__wexpect *e = in->src->expect;
    if (!e || in->events == UINT64_MAX)
        return 0;
    pthread_mutex_lock(&e->mu);
    int mine = !e->taken && same_replay(e, in, ro, baseline);
    e->taken |= mine;
    pthread_mutex_unlock(&e->mu);
    if (!mine)
        return 0;
    pthread_join(e->tid, NULL);
    e->joined = 1;
    if (e->rc != 0 || !read_the_same(e, in))
        return 0;
    *out = e->out;
    if (res)
        *res = e->res;
    return 1;
}
