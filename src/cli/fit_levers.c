/* fit_levers.c - what could make a card's first failing value fit, from
 * the analyses `memhist oom` and `memhist layers` make: the run that ran
 * out of memory on the card explained as `memhist oom` explains its first
 * OOM (oom_explain.h: allocator settings replayed on its requests, checked
 * by replay or estimates as the replay under the recorded settings says;
 * the layers whose activations, checkpointed, would free what the request
 * lacked, an estimate), and the checkpointing plan of the largest value
 * that fits (layers_answer.h: its estimated peak, an estimate). */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "fit.h"
#include "layers_answer.h"
#include "oom_explain.h"

static void names(const struct mh__layer_stats *st, const size_t *idx, size_t n, char *out,
                  size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < len; i++) {
        int k = snprintf(out + used, len - used, "%s%s", i ? ", " : "", st[idx[i]].name);
        if (k < 0 || (size_t)k >= len - used) {
            snprintf(out + (len > 5 ? len - 5 : 0), len > 5 ? 5 : len, " ...");
            break;
        }
        used += (size_t)k;
    }
}

static void add_case(struct mh__fit_answer *ans, const struct mh__oom_case *c, struct mh__layers *ly)
{
    for (size_t i = 0; i < c->nsugg && ans->nlevers < MH__FIT_MAX_LEVERS; i++) {
        const struct mh__suggestion *s = &c->sugg[i];
        if (!s->ok && !s->in_effect)
            continue;
        struct mh__fit_lever *l = &ans->levers[ans->nlevers++];
        memset(l, 0, sizeof *l);
        l->kind = MH__FIT_LEVER_SETTING;
        snprintf(l->setting, sizeof l->setting, "%s", s->setting);
        l->checked = !c->estimates;
        l->in_effect = s->in_effect;
        l->avoids = s->ok && s->ooms == 0;
        l->ooms = s->ooms;
        l->peak_reserved = s->peak_reserved;
    }
    if (c->nplan && ly && ans->nlevers < MH__FIT_MAX_LEVERS) {
        size_t nl;
        struct mh__fit_lever *l = &ans->levers[ans->nlevers++];
        memset(l, 0, sizeof *l);
        l->kind = MH__FIT_LEVER_PLAN_OOM;
        names(mh__layers_list(ly, &nl), c->plan, c->nplan, l->setting, sizeof l->setting);
        l->layers = (int)c->nplan;
        l->freed = c->plan_freed;
        l->avoids = c->plan_fits;
    }
}

/* The first OOM of the failing run on the card, explained as `memhist oom`
 * explains it. */
static int oom_levers(const char *path, struct mh__fit_answer *ans)
{
    const struct mh__analysis_want want = {MH__WANT_WHATIF_OOM, 0, 0};
    struct mh__analysis a;
    struct mh_oom_info oom;
    int rc = mh__analysis_open(path, &want, &a);
    if (rc < 0)
        return rc;
    if (mh_model_oom_count(a.rp.model) > 0 && mh_model_oom(a.rp.model, 0, &oom) == 0) {
        struct mh__oom_opts oo = {0, 0, 8};
        struct mh__oom_cases cs;
        memset(&cs, 0, sizeof cs);
        if ((rc = mh__oom_cases(&a, oom.device, &oo, &cs)) == 0 && cs.n > 0)
            add_case(ans, &cs.c[0], cs.ly);
        mh__oom_cases_free(&cs);
    }
    mh__analysis_close(&a);
    return rc;
}

/* The checkpointing plan of the largest fitting run. */
static int peak_plan(const char *path, struct mh__fit_answer *ans)
{
    struct mh__analysis a;
    struct mh__layers_answer la;
    int rc = mh__analysis_open(path, NULL, &a);
    if (rc < 0)
        return rc;
    int dev = mh_model_device_count(a.rp.model) ? mh_model_device_at(a.rp.model, 0) : -1;
    if (dev >= 0 && (rc = mh__layers_answer(&a, dev, &la)) == 0) {
        if (la.best > 0 && ans->nlevers < MH__FIT_MAX_LEVERS) {
            struct mh__fit_lever *l = &ans->levers[ans->nlevers++];
            memset(l, 0, sizeof *l);
            l->kind = MH__FIT_LEVER_PLAN_PEAK;
            names(la.layers, la.ranking, la.best, l->setting, sizeof l->setting);
            l->layers = (int)la.best;
            l->peak_before = la.peak;
            l->peak_after = la.plan_peak;
        }
        mh__layers_answer_free(&la);
    }
    mh__analysis_close(&a);
    return rc;
}

void mh__fit_levers(struct mh__fit *f, int card)
{
    struct mh__fit_answer *ans = &f->answers[card];
    const struct mh__fit_card *c = &f->o->cards[card];
    ans->nlevers = 0;
    ans->levers_error = 0;
    if (ans->fail_trial >= 0) {
        const struct mh__fit_trial *t = &f->trials[ans->fail_trial];
        if (t->outcome == MH__FIT_OOM && t->capacity == c->trial_capacity)
            ans->levers_error = oom_levers(t->path, ans);
    }
    if (ans->fit_trial >= 0 && ans->levers_error == 0)
        ans->levers_error = peak_plan(f->trials[ans->fit_trial].path, ans);
}
