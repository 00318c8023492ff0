/* plot_rank.c - ranking allocation sites into the timeline's coloured
 * groups (see plot_int.h).
 *
 * Sites (plot_sites.c) are grouped by their label (the module's layer when
 * the recording has module scopes, else the most informative frame, as in
 * src/analysis/stacks.h), since that is what the legend names: two call
 * paths through the same line of user code are one site. Sites are ranked by the
 * bytes they held at the allocated peak; the top ones get colours and every
 * other stack falls into the grey "rest" group. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "stacks.h"
#include "plot_int.h"

struct site {
    char label[MH__PLOT_LABEL];
    uint32_t stack;
    uint64_t bytes;
};

static int by_label(const void *a, const void *b)
{
    const struct site *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : (x->stack > y->stack) - (x->stack < y->stack);
}

static uint64_t at_peak(const struct mh__plot_scan *s, const struct mh__plot_stack *st)
{
    return st->seq == s->peak_seq ? st->saved : st->cur;
}

/* Index of the site with the most bytes among the merged sites not yet
 * taken; ties go to the first label in sort order. */
static size_t pick_top(const struct site *sites, size_t n, const unsigned char *taken)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (!taken[i] && sites[i].bytes > 0 && (best == n || sites[i].bytes > sites[best].bytes))
            best = i;
    return best;
}

/* Sorts sites by label and merges equal labels into the first of each run;
 * returns the number of merged sites (stored at the front). */
static size_t merge_sites(struct site *sites, size_t n)
{
    qsort(sites, n, sizeof *sites, by_label);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && strcmp(sites[m - 1].label, sites[i].label) == 0)
            sites[m - 1].bytes += sites[i].bytes;
        else
            sites[m++] = sites[i];
    }
    return m;
}

int mh__plot_scan_rank(struct mh__session *r, struct mh__plot_scan *s, unsigned top)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++)
        n += s->stacks[i].seen;
    struct site *sites = calloc(n ? n : 1, sizeof *sites);
    unsigned char *taken = calloc(n ? n : 1, 1);
    struct mh__layer_namer nm;
    if (mh__plot_sites_namer(&s->sites, mh__session_reader(r), &nm) < 0 || !sites || !taken) {
        mh__layer_namer_free(&nm);
        free(sites);
        free(taken);
        return MH_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->nstacks; i++)
        if (s->stacks[i].seen) {
            sites[k].stack = (uint32_t)i;
            sites[k].bytes = at_peak(s, &s->stacks[i]);
            mh__plot_site_label(&nm, &s->sites, (uint32_t)i, sites[k].label,
                                sizeof sites[k].label);
            k++;
        }
    size_t m = merge_sites(sites, n);
    if (top > MH__PLOT_MAX_TOP)
        top = MH__PLOT_MAX_TOP;
    uint64_t total = 0;
    for (size_t i = 0; i < m; i++)
        total += sites[i].bytes;
    s->ngroups = 0;
    size_t best;
    while (s->ngroups < top && (best = pick_top(sites, m, taken)) < m) {
        taken[best] = 1;
        memcpy(s->labels[s->ngroups], sites[best].label, MH__PLOT_LABEL);
        s->group_peak[s->ngroups] = sites[best].bytes;
        total -= sites[best].bytes;
        s->ngroups++;
    }
    s->group_peak[s->ngroups] = total;
    free(sites);
    free(taken);
    /* every stack: its label's group, or the rest */
    for (size_t i = 0; i < s->nstacks; i++) {
        struct mh__plot_stack *st = &s->stacks[i];
        st->group = (int16_t)s->ngroups;
        if (!st->seen)
            continue;
        char label[MH__PLOT_LABEL];
        mh__plot_site_label(&nm, &s->sites, (uint32_t)i, label, sizeof label);
        for (unsigned g = 0; g < s->ngroups; g++)
            if (strcmp(label, s->labels[g]) == 0)
                st->group = (int16_t)g;
    }
    mh__layer_namer_free(&nm);
    return 0;
}
