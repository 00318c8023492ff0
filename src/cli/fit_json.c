/* fit_json.c - `memhist fit --json`: the answer in the project's schema
 * envelope ({"schema": 1, "command": "fit", ...}; docs/json.md,
 * docs/schema/fit.schema.json): the search asked for, each card's answer
 * with its levers, and every run. Reads the answer structs of fit.h. */
#include <stdio.h>

#include "fit.h"
#include "json.h"
#include "sink.h"

static void json_value_or_null(struct mh__json *j, const char *key, int64_t v)
{
    mh__json_key(j, key);
    if (v >= 0)
        mh__json_int(j, v);
    else
        mh__json_null(j);
}

static void json_oom(struct mh__json *j, const struct mh__fit_trial *t)
{
    mh__json_key(j, "oom");
    if (t->outcome != MH__FIT_OOM) {
        mh__json_null(j);
        return;
    }
    mh__json_begin_object(j);
    mh__json_kv_uint(j, "request", t->oom.request);
    mh__json_kv_int(j, "step", t->oom.step);
    mh__json_key(j, "phase");
    if (t->oom.phase > 0 && t->oom.phase < MH_PHASE_COUNT)
        mh__json_string(j, mh_phase_name((unsigned)t->oom.phase));
    else
        mh__json_null(j);
    mh__json_kv_uint(j, "allocated", t->oom.allocated);
    mh__json_kv_uint(j, "reserved", t->oom.reserved);
    mh__json_end_object(j);
}

static void json_lever(struct mh__json *j, const struct mh__fit_lever *l)
{
    static const char *const kinds[] = {"alloc_conf", "checkpointing_at_oom",
                                        "checkpointing_at_peak"};
    mh__json_begin_object(j);
    mh__json_kv_string(j, "kind", kinds[l->kind]);
    mh__json_kv_bool(j, "checked", l->checked);
    if (l->kind == MH__FIT_LEVER_SETTING) {
        mh__json_kv_string(j, "setting", l->setting);
        mh__json_kv_bool(j, "in_effect", l->in_effect);
        mh__json_kv_bool(j, "avoids_oom", l->avoids);
        mh__json_kv_uint(j, "ooms", l->ooms);
        mh__json_kv_uint(j, "peak_reserved", l->peak_reserved);
    } else {
        mh__json_kv_string(j, "layers", l->setting);
        mh__json_kv_int(j, "layer_count", l->layers);
        if (l->kind == MH__FIT_LEVER_PLAN_OOM) {
            mh__json_kv_uint(j, "freed_at_oom", l->freed);
            mh__json_kv_bool(j, "request_would_fit", l->avoids);
        } else {
            mh__json_kv_uint(j, "peak_allocated", l->peak_before);
            mh__json_kv_uint(j, "estimated_peak_allocated", l->peak_after);
        }
    }
    mh__json_end_object(j);
}

static void json_card(struct mh__json *j, const struct mh__fit *f, int c)
{
    static const char *const status[] = {"boundary", "all_fit", "none_fit", "undecided"};
    const struct mh__fit_card *card = &f->o->cards[c];
    const struct mh__fit_answer *a = &f->answers[c];
    mh__json_begin_object(j);
    mh__json_kv_string(j, "card", card->label);
    mh__json_kv_string(j, "gpu", card->gpu->key);
    mh__json_kv_string(j, "name", card->gpu->name);
    mh__json_kv_uint(j, "total_bytes", card->capacity);
    mh__json_kv_uint(j, "context_bytes", f->o->context);
    mh__json_kv_uint(j, "headroom_bytes", card->headroom);
    mh__json_kv_uint(j, "limit_bytes", card->limit);
    mh__json_kv_string(j, "status", status[a->status]);
    json_value_or_null(j, "fits", a->fit_value);
    json_value_or_null(j, "fits_run", a->fit_trial >= 0 ? a->fit_trial + 1 : -1);
    mh__json_key(j, "fits_peak_allocated");
    a->fit_trial >= 0 ? mh__json_uint(j, a->fit_peak_allocated) : mh__json_null(j);
    mh__json_key(j, "fits_peak_reserved");
    a->fit_trial >= 0 ? mh__json_uint(j, a->fit_peak_reserved) : mh__json_null(j);
    mh__json_key(j, "to_spare_bytes");
    uint64_t usable = card->capacity - f->o->context;
    if (a->fit_trial >= 0)
        mh__json_uint(j, usable > a->fit_peak_reserved ? usable - a->fit_peak_reserved : 0);
    else
        mh__json_null(j);
    json_value_or_null(j, "fails", a->fail_value);
    json_value_or_null(j, "fails_run", a->fail_trial >= 0 ? a->fail_trial + 1 : -1);
    if (a->fail_trial >= 0)
        json_oom(j, &f->trials[a->fail_trial]);
    else
        mh__json_kv_string(j, "oom", NULL);
    mh__json_kv_int(j, "runs", a->trials);
    mh__json_kv_bool(j, "monotonic", !a->not_monotonic);
    mh__json_key(j, "not_monotonic");
    if (a->not_monotonic) {
        mh__json_begin_object(j);
        mh__json_kv_string(j, "shown_by", a->nm_by_peak ? "peaks" : "verdicts");
        mh__json_kv_int(j, "lower_value", a->nm_low);
        mh__json_kv_int(j, "higher_value", a->nm_high);
        mh__json_end_object(j);
    } else {
        mh__json_null(j);
    }
    mh__json_key(j, "levers");
    mh__json_begin_array(j);
    for (int i = 0; i < a->nlevers; i++)
        json_lever(j, &a->levers[i]);
    mh__json_end_array(j);
    mh__json_end_object(j);
}

static void json_trial(struct mh__json *j, const struct mh__fit *f, int i)
{
    const struct mh__fit_trial *t = &f->trials[i];
    mh__json_begin_object(j);
    mh__json_kv_int(j, "run", i + 1);
    mh__json_kv_int(j, "value", t->value);
    mh__json_kv_string(j, "ran_as", f->o->cards[t->card].label);
    mh__json_kv_uint(j, "device_memory", t->capacity);
    mh__json_kv_string(j, "result", mh__fit_outcome_name(t->outcome));
    mh__json_kv_int(j, "exit_status", t->exit_status);
    mh__json_kv_uint(j, "peak_allocated", t->peak_allocated);
    mh__json_kv_uint(j, "peak_reserved", t->peak_reserved);
    mh__json_kv_uint(j, "peak_requested", t->peak_requested);
    mh__json_key(j, "peak_device_used");
    t->has_stats ? mh__json_uint(j, t->peak_used) : mh__json_null(j);
    mh__json_kv_uint(j, "persistent_at_peak", t->persistent);
    mh__json_kv_int(j, "steps", t->steps);
    mh__json_kv_uint(j, "retries", t->retries);
    mh__json_kv_bool(j, "exact_for_larger_cards", mh__fit_trial_clean(t));
    mh__json_kv_bool(j, "peak_still_rising", t->rising);
    json_oom(j, t);
    mh__json_kv_double(j, "seconds", t->seconds, 2);
    mh__json_kv_uint(j, "host_memory_peak", t->host_peak);
    mh__json_kv_string(j, "file", t->path);
    mh__json_kv_string(j, "log", t->log);
    mh__json_end_object(j);
}

void mh__fit_print_json(const struct mh__fit *f)
{
    const struct mh__fit_opts *o = f->o;
    struct mh__json j;
    struct mh__sink sink;
    char cmd[4096];
    mh__cli_json_begin(&j, &sink, "fit");
    mh__json_kv_string(&j, "name", o->cmd.name);
    mh__json_kv_int(&j, "lo", o->lo);
    mh__json_kv_int(&j, "hi", o->hi);
    mh__json_kv_uint(&j, "steps", o->steps);
    mh__fit_command_text(o->cmd.argv, cmd, sizeof cmd);
    mh__json_kv_string(&j, "command_line", cmd);
    mh__json_kv_string(&j, "search", o->bisect ? "bisect" : "predict");
    mh__json_kv_int(&j, "jobs", f->jobs);
    mh__json_kv_double(&j, "wall_seconds", f->wall_seconds, 2);
    mh__json_key(&j, "plot");
    mh__json_string(&j, o->plot);
    mh__json_key(&j, "cards");
    mh__json_begin_array(&j);
    for (int c = 0; c < o->ncards; c++)
        json_card(&j, f, c);
    mh__json_end_array(&j);
    mh__json_key(&j, "runs");
    mh__json_begin_array(&j);
    for (int i = 0; i < f->ntrials; i++)
        json_trial(&j, f, i);
    mh__json_end_array(&j);
    mh__json_end_object(&j);
    mh__sink_puts(&sink, "\n");
    mh__sink_finish(&sink);
}
