/* test_analysis_layer_names.c - layer names from module paths
 * (src/analysis/layer_names.c): a path is cut at its first index or numbered
 * block kept as an attribute (a name with a digit that holds modules beside
 * a sibling of the same stem), whichever comes first; a leaf named with a
 * number ("conv1") and a second model's prefix ("GPT_2") are not blocks.
 * Outside module scopes, a site whose allocations torch tagged mostly with
 * one role is named by the role (site_roles.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/memhist.h"
#include "layer_names.h"
#include "site_roles.h"
#include "stacks.h"

static const char *const PATHS[] = {
    "transformer.h.3.mlp.c_fc", /* an index: cut there */
    "transformer.ln_f",
    "block2.mlp.c_fc", /* block2 holds modules, beside block1: cut after it */
    "block2.ln_1",
    "block2", /* the block's own allocations */
    "block1.mlp.c_fc",
    "conv1", /* a leaf named with a number */
    "features.denseblock1.denselayer2.conv1",
    "features.denseblock2.denselayer1.conv1",
    "inception3b.branch2.0.conv", /* the block comes before the index */
    "inception4a.branch1.conv",
    "layer1.0.conv1", /* a Sequential of blocks: its index follows */
    "layer2.1.conv1",
    "stage1.blocks.0.attn", /* no other stage: cut at the index */
    "enc.fc1",              /* no block: cut at the module holding others */
    "bert.embeddings.word_embeddings",
    "bert.encoder.layer.0.attention.self.query",
    "GPT_2.transformer.h.0.mlp", /* a second model's prefix has no sibling */
    "GPT_2.lm_head",
};
static const char *const LAYERS[] = {
    "transformer.h.3",      "transformer.ln_f",     "block2",      "block2",
    "block2",               "block1",               "conv1",       "features.denseblock1",
    "features.denseblock2", "inception3b",          "inception4a", "layer1.0",
    "layer2.1",             "stage1.blocks.0",      "enc",         "bert.embeddings",
    "bert.encoder.layer.0", "GPT_2.transformer.h.0", "GPT_2.lm_head",
};
#define NPATHS (sizeof PATHS / sizeof *PATHS)

/* Interns the paths, one allocation each, and reads them back from the
 * writer's memory (*w, freed after the reader closes). */
static struct mh_reader *book_of(const char *const *paths, size_t npaths, uint32_t *ids,
                                 struct mh_writer **wp)
{
    struct mh_writer *w;
    const void *data;
    size_t len;
    struct mh_reader *r;
    cr_assert_eq(mh_writer_open_mem(NULL, &w), 0);
    for (size_t i = 0; i < npaths; i++) {
        struct mh_event e;
        memset(&e, 0, sizeof e);
        e.time_ns = 1000 + i;
        e.kind = MH_EV_ALLOC;
        e.addr = 0x1000 * (i + 1);
        e.size = 512;
        e.str = ids[i] = (uint32_t)mh_writer_intern_string(w, paths[i], strlen(paths[i]));
        cr_assert_eq(mh_writer_event(w, &e), 0);
    }
    cr_assert_eq(mh_writer_close(w), 0);
    cr_assert_eq(mh_writer_mem(w, &data, &len), 0);
    cr_assert_eq(mh_reader_open_mem(data, len, &r), 0);
    struct mh_event e;
    while (mh_reader_next(r, &e) > 0)
        ;
    *wp = w;
    return r;
}

static struct mh_reader *book(uint32_t *ids, struct mh_writer **wp)
{
    return book_of(PATHS, NPATHS, ids, wp);
}

/* Names every path of a recording of `paths` (all added to the namer). */
static void expect_layers(const char *const *paths, const char *const *layers, size_t n)
{
    uint32_t ids[32];
    struct mh_writer *w;
    cr_assert_leq(n, 32);
    struct mh_reader *r = book_of(paths, n, ids, &w);
    struct mh__layer_namer nm;
    mh__layer_namer_init(&nm, r);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(mh__layer_namer_add(&nm, ids[i]), 0);
    cr_assert_eq(mh__layer_namer_add(&nm, ids[0]), 0); /* again: kept once */
    cr_assert_eq(mh__layer_namer_ready(&nm), 0);
    cr_expect_eq(nm.npaths, n);
    char buf[128];
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(mh__layer_name(&nm, ids[i], 0, MH_ROLE_NONE, buf, sizeof buf), layers[i], "%s",
                         paths[i]);
    mh__layer_namer_free(&nm);
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

Test(analysis_layer_names, cuts_paths_at_indices_and_numbered_blocks)
{
    expect_layers(PATHS, LAYERS, NPATHS);
}

Test(analysis_layer_names, a_wrapper_alone_is_not_a_layer)
{
    /* a whole model compiled: its graph module named under the root */
    static const char *const compiled[] = {"GPT", "GPT.GraphModule", "GPT.GraphModule.sub"};
    expect_layers(compiled, compiled, 3);
    static const char *const wrapped[] = {"model.enc.fc", "model.dec.fc", "model.dec.norm"};
    static const char *const layers[] = {"model.enc", "model.dec", "model.dec"};
    expect_layers(wrapped, layers, 3);
}

Test(analysis_layer_names, without_the_paths_cuts_at_indices_only)
{
    uint32_t ids[NPATHS];
    struct mh_writer *w;
    struct mh_reader *r = book(ids, &w);
    struct mh__layer_namer nm;
    mh__layer_namer_init(&nm, r);
    char buf[128];
    cr_expect_str_eq(mh__layer_name(&nm, ids[0], 0, MH_ROLE_NONE, buf, sizeof buf), "transformer.h.3");
    cr_expect_str_eq(mh__layer_name(&nm, ids[2], 0, MH_ROLE_NONE, buf, sizeof buf), "block2.mlp.c_fc");
    cr_expect_str_eq(mh__layer_name(&nm, ids[9], 0, MH_ROLE_NONE, buf, sizeof buf), "inception3b.branch2.0");
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

Test(analysis_layer_names, module_paths)
{
    cr_expect(mh__is_module_path("transformer.h.11.mlp"));
    cr_expect(mh__is_module_path("trunk_output.block1.block1-0.f")); /* RegNet's names */
    cr_expect(!mh__is_module_path("a..b"));
    cr_expect(!mh__is_module_path("a.b."));
    cr_expect(!mh__is_module_path(".a"));
    cr_expect(!mh__is_module_path("train.py:12 f"));
    cr_expect(!mh__is_module_path("torch internal: MmBackward0"));
    cr_expect(!mh__is_module_path("<no stack>"));
    cr_expect(!mh__is_module_path("loading data"));
    cr_expect(!mh__is_module_path(""));
    cr_expect(!mh__is_module_path(NULL));
}

Test(analysis_layer_names, a_site_of_tagged_allocations_is_named_by_its_role)
{
    uint32_t ids[NPATHS];
    struct mh_writer *w;
    struct mh_reader *r = book(ids, &w);
    struct mh__layer_namer nm;
    mh__layer_namer_init(&nm, r);
    char buf[128], label[128];
    cr_expect_str_eq(mh__layer_name(&nm, 0, 0, MH_ROLE_OPTIMIZER_STATE, buf, sizeof buf),
                     "optimizer state", "no scope: the role");
    cr_expect_str_eq(mh__layer_name(&nm, 0, 0, MH_ROLE_PARAMETER, buf, sizeof buf), "parameters");
    cr_expect_str_eq(mh__layer_name(&nm, 0, 0, MH_ROLE_GRADIENT, buf, sizeof buf), "gradients");
    cr_expect_str_eq(mh__layer_name(&nm, 0, 0, MH_ROLE_BUFFER, buf, sizeof buf), "buffers");
    cr_expect_str_eq(mh__layer_name(&nm, ids[0], 0, MH_ROLE_GRADIENT, buf, sizeof buf),
                     "transformer.h.3", "a module scope names it first");
    cr_expect_str_eq(mh__layer_name(&nm, 0, 0, MH_ROLE_NONE, buf, sizeof buf),
                     mh__stack_label(r, 0, label, sizeof label), "no role: its stack's label");
    mh_reader_close(r);
    mh_writer_free_mem(w);
}

static void note(struct mh__site_roles *sr, uint32_t str, uint32_t stack, int role)
{
    struct mh__alloc_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.str = str;
    rec.stack = stack;
    rec.role = (uint8_t)role;
    cr_assert_eq(mh__site_roles_note(sr, &rec), 0);
}

Test(analysis_layer_names, site_roles_take_the_role_of_most_allocations)
{
    struct mh__site_roles sr = {0};
    note(&sr, 0, 7, MH_ROLE_NONE); /* before any tagged record of the site: not counted */
    cr_expect_eq(mh__site_roles_of(&sr, 0, 7), MH_ROLE_NONE, "no tagged record");
    note(&sr, 0, 7, MH_ROLE_OPTIMIZER_STATE);
    note(&sr, 0, 7, MH_ROLE_NONE);
    cr_expect_eq(mh__site_roles_of(&sr, 0, 7), MH_ROLE_OPTIMIZER_STATE, "half of them");
    note(&sr, 0, 7, MH_ROLE_NONE);
    cr_expect_eq(mh__site_roles_of(&sr, 0, 7), MH_ROLE_NONE, "fewer than half");
    note(&sr, 0, 7, MH_ROLE_OPTIMIZER_STATE);
    note(&sr, 0, 7, MH_ROLE_OPTIMIZER_STATE);
    note(&sr, 0, 7, MH_ROLE_GRADIENT);
    cr_expect_eq(mh__site_roles_of(&sr, 0, 7), MH_ROLE_OPTIMIZER_STATE, "the most frequent role");
    note(&sr, 3, 7, MH_ROLE_PARAMETER);
    cr_expect_eq(mh__site_roles_of(&sr, 3, 7), MH_ROLE_PARAMETER, "another string: another site");
    cr_expect_eq(mh__site_roles_of(&sr, 0, 8), MH_ROLE_NONE, "another stack: another site");
    note(&sr, 0, 9, MH_ROLE_OUTPUT);
    cr_expect_eq(mh__site_roles_of(&sr, 0, 9), MH_ROLE_NONE, "an output tag is no role");
    mh__site_roles_free(&sr);
    cr_expect_eq(mh__site_roles_of(&sr, 3, 7), MH_ROLE_NONE, "freed: empty");
}
