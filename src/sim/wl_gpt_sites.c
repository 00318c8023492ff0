/* wl_gpt_sites.c - builds the GPT workload's allocation sites: nanoGPT-like
 * Python stacks (innermost first: torch internals, the model's module, its
 * parents, the training loop) and module paths such as
 * "transformer.h.11.attn.c_attn". Backward sites carry autograd's frames and
 * the module path of the layer; optimizer sites torch/optim/adamw.py frames.
 * Owns the per-layer site array. */
#include <stdio.h>
#include <stdlib.h>

#include "memhist/error.h"
#include "wl_gpt_sites.h"

/* clang-format off */
#define CALL {"torch/nn/modules/module.py", "Module._call_impl", 1762}
/* clang-format on */

enum site_cls { C_LN1, C_ATTN, C_LN2, C_MLP, C_BLOCK1, C_BLOCK2, C_BWD };
enum site_inner { I_NONE, I_LINEAR, I_LAYERNORM, I_DROPOUT, I_GELU };

struct lsite_desc {
    int cls;
    uint32_t line;
    int inner;
    const char *sub; /* module path below the class, or NULL */
};

static const struct lsite_desc ldesc[L_NSITES] = {
    [L_LN1] = {C_LN1, 28, I_LAYERNORM, NULL},
    [L_LN1_STATS] = {C_LN1, 28, I_LAYERNORM, NULL},
    [L_LN1_CAST] = {C_ATTN, 142, I_LINEAR, "c_attn"},
    [L_ATTN_WCAST] = {C_ATTN, 142, I_LINEAR, "c_attn"},
    [L_QKV] = {C_ATTN, 142, I_LINEAR, "c_attn"},
    [L_SDPA] = {C_ATTN, 150, I_NONE, NULL},
    [L_SDPA_LSE] = {C_ATTN, 150, I_NONE, NULL},
    [L_SCORES] = {C_ATTN, 153, I_NONE, NULL},
    [L_MASKED] = {C_ATTN, 154, I_NONE, NULL},
    [L_SOFTMAX] = {C_ATTN, 155, I_NONE, NULL},
    [L_ATT_MASK] = {C_ATTN, 156, I_DROPOUT, "attn_dropout"},
    [L_ATT_DROP] = {C_ATTN, 156, I_DROPOUT, "attn_dropout"},
    [L_ATT_BF16] = {C_ATTN, 157, I_NONE, NULL},
    [L_APROJ_WCAST] = {C_ATTN, 160, I_LINEAR, "c_proj"},
    [L_APROJ] = {C_ATTN, 160, I_LINEAR, "c_proj"},
    [L_ARESID_MASK] = {C_ATTN, 160, I_DROPOUT, "resid_dropout"},
    [L_ARESID_DROP] = {C_ATTN, 160, I_DROPOUT, "resid_dropout"},
    [L_ARESID_ADD] = {C_BLOCK1, 201, I_NONE, NULL},
    [L_LN2] = {C_LN2, 28, I_LAYERNORM, NULL},
    [L_LN2_STATS] = {C_LN2, 28, I_LAYERNORM, NULL},
    [L_LN2_CAST] = {C_MLP, 175, I_LINEAR, "c_fc"},
    [L_FC_WCAST] = {C_MLP, 175, I_LINEAR, "c_fc"},
    [L_FC] = {C_MLP, 175, I_LINEAR, "c_fc"},
    [L_GELU] = {C_MLP, 176, I_GELU, "gelu"},
    [L_MPROJ_WCAST] = {C_MLP, 177, I_LINEAR, "c_proj"},
    [L_MPROJ] = {C_MLP, 177, I_LINEAR, "c_proj"},
    [L_MRESID_MASK] = {C_MLP, 178, I_DROPOUT, "dropout"},
    [L_MRESID_DROP] = {C_MLP, 178, I_DROPOUT, "dropout"},
    [L_MRESID_ADD] = {C_BLOCK2, 202, I_NONE, NULL},
    [L_BWD_ATTN] = {C_BWD, 0, I_NONE, "attn"},
    [L_BWD_MLP] = {C_BWD, 0, I_NONE, "mlp"},
    [L_BWD_LN1] = {C_BWD, 0, I_NONE, "ln_1"},
    [L_BWD_LN2] = {C_BWD, 0, I_NONE, "ln_2"},
    [L_BWD_BLOCK] = {C_BWD, 0, I_NONE, NULL},
};

static const struct wl_frame fwd_tail[] = {CALL,
                                           {"model.py", "GPT.forward", 260},
                                           CALL,
                                           {"train.py", "train_step", 88},
                                           {"train.py", "<module>", 120}};
static const struct wl_frame bwd_frames[] = {
    {"torch/autograd/graph.py", "_engine_run_backward", 825},
    {"torch/autograd/__init__.py", "backward", 347},
    {"torch/_tensor.py", "Tensor.backward", 626},
    {"train.py", "train_step", 92},
    {"train.py", "<module>", 120}};

static size_t add_inner(struct wl_frame *f, size_t n, int inner)
{
    static const struct wl_frame lin = {"torch/nn/modules/linear.py", "Linear.forward", 125};
    static const struct wl_frame ln = {"torch/nn/functional.py", "layer_norm", 2910};
    static const struct wl_frame drop[2] = {{"torch/nn/functional.py", "dropout", 1425},
                                            {"torch/nn/modules/dropout.py", "Dropout.forward", 70}};
    static const struct wl_frame gelu = {"torch/nn/modules/activation.py", "GELU.forward", 734};
    static const struct wl_frame call = CALL;
    switch (inner) {
    case I_LINEAR:
        f[n++] = lin;
        f[n++] = call;
        break;
    case I_LAYERNORM: f[n++] = ln; break;
    case I_DROPOUT:
        f[n++] = drop[0];
        f[n++] = drop[1];
        f[n++] = call;
        break;
    case I_GELU:
        f[n++] = gelu;
        f[n++] = call;
        break;
    default: break;
    }
    return n;
}

static struct wl_site layer_site(struct wl *w, int layer, const struct lsite_desc *d)
{
    struct wl_frame f[24];
    size_t n = 0;
    char meta[96];
    static const char *const cls_meta[] = {"ln_1", "attn", "ln_2", "mlp", NULL, NULL, NULL};
    if (d->cls == C_BWD) {
        snprintf(meta, sizeof meta, "transformer.h.%d%s%s", layer, d->sub ? "." : "",
                 d->sub ? d->sub : "");
        return mh__wl_site(w, bwd_frames, sizeof bwd_frames / sizeof *bwd_frames, meta);
    }
    n = add_inner(f, n, d->inner);
    if (d->cls == C_ATTN)
        f[n++] = (struct wl_frame){"model.py", "CausalSelfAttention.forward", d->line};
    else if (d->cls == C_MLP)
        f[n++] = (struct wl_frame){"model.py", "MLP.forward", d->line};
    else if (d->cls == C_LN1 || d->cls == C_LN2)
        f[n++] = (struct wl_frame){"model.py", "LayerNorm.forward", d->line};
    if (d->cls != C_BLOCK1 && d->cls != C_BLOCK2)
        f[n++] = (struct wl_frame)CALL;
    int second = d->cls == C_LN2 || d->cls == C_MLP || d->cls == C_BLOCK2;
    f[n++] = (struct wl_frame){"model.py", "Block.forward", second ? 202 : 201};
    for (size_t i = 0; i < sizeof fwd_tail / sizeof *fwd_tail; i++)
        f[n++] = fwd_tail[i];
    const char *cm = cls_meta[d->cls];
    if (cm)
        snprintf(meta, sizeof meta, "transformer.h.%d.%s%s%s", layer, cm, d->sub ? "." : "",
                 d->sub ? d->sub : "");
    else
        snprintf(meta, sizeof meta, "transformer.h.%d", layer);
    return mh__wl_site(w, f, n, meta);
}

/* Model-level sites: the GPT.forward line, an inner kind and a module path. */
struct gsite_desc {
    const struct wl_frame *frames;
    size_t n;
    const char *meta;
};

#define FR(...)                                                                                    \
    (const struct wl_frame[]){__VA_ARGS__},                                                        \
        sizeof((const struct wl_frame[]){__VA_ARGS__}) / sizeof(struct wl_frame)
#define GPT_TAIL(line)                                                                             \
    {"model.py", "GPT.forward", line}, CALL, {"train.py", "train_step", 88},                       \
    {                                                                                              \
        "train.py", "<module>", 120                                                                \
    }
#define BWD_TAIL                                                                                   \
    {"torch/autograd/graph.py", "_engine_run_backward", 825},                                      \
        {"torch/autograd/__init__.py", "backward", 347},                                           \
        {"torch/_tensor.py", "Tensor.backward", 626}, {"train.py", "train_step", 92},              \
    {                                                                                              \
        "train.py", "<module>", 120                                                                \
    }

static const struct gsite_desc gdesc[G_NSITES] = {
    [G_INIT] = {FR({"torch/nn/modules/module.py", "Module._apply", 942},
                   {"torch/nn/modules/module.py", "Module.to", 1340}, {"train.py", "<module>", 45}),
                NULL},
    [G_BATCH] = {FR({"train.py", "get_batch", 61}, {"train.py", "train_step", 86},
                    {"train.py", "<module>", 120}),
                 NULL},
    [G_TOK_EMB] = {FR({"torch/nn/functional.py", "embedding", 2551},
                      {"torch/nn/modules/sparse.py", "Embedding.forward", 190}, CALL,
                      GPT_TAIL(248)),
                   "transformer.wte"},
    [G_POS_EMB] = {FR({"torch/nn/functional.py", "embedding", 2551},
                      {"torch/nn/modules/sparse.py", "Embedding.forward", 190}, CALL,
                      GPT_TAIL(249)),
                   "transformer.wpe"},
    [G_EMB_ADD] = {FR(GPT_TAIL(250)), NULL},
    [G_EMB_MASK] = {FR({"torch/nn/functional.py", "dropout", 1425},
                       {"torch/nn/modules/dropout.py", "Dropout.forward", 70}, CALL, GPT_TAIL(250)),
                    "transformer.drop"},
    [G_EMB_DROP] = {FR({"torch/nn/functional.py", "dropout", 1425},
                       {"torch/nn/modules/dropout.py", "Dropout.forward", 70}, CALL, GPT_TAIL(250)),
                    "transformer.drop"},
    [G_LNF] = {FR({"torch/nn/functional.py", "layer_norm", 2910},
                  {"model.py", "LayerNorm.forward", 28}, CALL, GPT_TAIL(265)),
               "transformer.ln_f"},
    [G_LNF_STATS] = {FR({"torch/nn/functional.py", "layer_norm", 2910},
                        {"model.py", "LayerNorm.forward", 28}, CALL, GPT_TAIL(265)),
                     "transformer.ln_f"},
    [G_LNF_CAST] = {FR({"torch/nn/modules/linear.py", "Linear.forward", 125}, CALL, GPT_TAIL(266)),
                    "lm_head"},
    [G_HEAD_WCAST] = {FR({"torch/nn/modules/linear.py", "Linear.forward", 125}, CALL,
                         GPT_TAIL(266)),
                      "lm_head"},
    [G_LOGITS] = {FR({"torch/nn/modules/linear.py", "Linear.forward", 125}, CALL, GPT_TAIL(266)),
                  "lm_head"},
    [G_LOGITS_F32] = {FR({"torch/nn/functional.py", "cross_entropy", 3494}, GPT_TAIL(270)), NULL},
    [G_LOGSOFTMAX] = {FR({"torch/nn/functional.py", "cross_entropy", 3494}, GPT_TAIL(270)), NULL},
    [G_LOSS] = {FR({"torch/nn/functional.py", "cross_entropy", 3494}, GPT_TAIL(270)), NULL},
    [G_BWD_LOSS] = {FR(BWD_TAIL), "loss"},
    [G_BWD_HEAD] = {FR(BWD_TAIL), "lm_head"},
    [G_BWD_LNF] = {FR(BWD_TAIL), "transformer.ln_f"},
    [G_BWD_EMB] = {FR(BWD_TAIL), "transformer.wte"},
    [G_OPT_INIT] = {FR({"torch/optim/adamw.py", "AdamW._init_group", 160},
                       {"torch/optim/adamw.py", "AdamW.step", 215},
                       {"torch/optim/optimizer.py", "wrapper", 487}, {"train.py", "train_step", 95},
                       {"train.py", "<module>", 120}),
                    "optimizer.state"},
    [G_OPT_TEMP] = {FR({"torch/optim/adamw.py", "_multi_tensor_adamw", 596},
                       {"torch/optim/adamw.py", "adamw", 780},
                       {"torch/optim/adamw.py", "AdamW.step", 230},
                       {"torch/optim/optimizer.py", "wrapper", 487}, {"train.py", "train_step", 95},
                       {"train.py", "<module>", 120}),
                    "optimizer"},
};

int mh__gpt_sites_init(struct wl *w, struct gpt_sites *s, int layers)
{
    s->layer = calloc((size_t)layers * L_NSITES, sizeof *s->layer);
    if (!s->layer)
        return MH_ENOMEM;
    for (int l = 0; l < layers; l++)
        for (int i = 0; i < L_NSITES; i++)
            s->layer[(size_t)l * L_NSITES + (size_t)i] = layer_site(w, l, &ldesc[i]);
    for (int i = 0; i < G_NSITES; i++)
        s->global[i] = mh__wl_site(w, gdesc[i].frames, gdesc[i].n, gdesc[i].meta);
    return 0;
}

void mh__gpt_sites_free(struct gpt_sites *s)
{
    free(s->layer);
    s->layer = NULL;
}
