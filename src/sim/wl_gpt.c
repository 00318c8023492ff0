/* wl_gpt.c - the "gpt" workload: a nanoGPT-style transformer LM training
 * loop under bf16 autocast with AdamW (foreach), as a tensor-lifetime model.
 * fp32 master weights live for the run; forward casts weights to bf16 and
 * saves per layer what autograd keeps (layer-norm statistics, bf16 inputs of
 * every linear, qkv, attention output and softmax statistics or, without
 * flash attention, the S x S probabilities and dropout masks, MLP
 * intermediates, residual stream in fp32); the fp32 logits and log-softmax of
 * the loss dominate the end of the forward pass; backward runs in reverse
 * layer order, frees what each layer saved and creates fp32 gradients; the
 * optimizer creates exp_avg/exp_avg_sq at the first step (so step 0 grows
 * memory like a real run) and foreach temporaries every step;
 * zero_grad(set_to_none=True) frees the gradients. Sequence lengths vary per
 * step, which fragments the cache as real LM runs do. */
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "wl_gpt_sites.h"

enum { P_LAYERS, P_HIDDEN, P_HEADS, P_SEQ, P_BATCH, P_VOCAB, P_FLASH, P_SEQVAR, P_CKPT, P_COUNT };

static const struct mh__workload_param gpt_params[] = {
    {"layers", 12, 1, 512, "transformer blocks"},
    {"hidden", 1024, 64, 65536, "model width (multiple of heads)"},
    {"heads", 16, 1, 512, "attention heads"},
    {"seq", 1024, 64, 1 << 20, "maximum sequence length"},
    {"batch", 8, 1, 1 << 16, "sequences per step"},
    {"vocab", 50257, 2, 1 << 22, "vocabulary size"},
    {"flash", 1, 0, 1, "1: fused flash attention; 0: explicit S x S attention"},
    {"seqvar", 25, 0, 90, "per-step sequence length variation in percent"},
    {"checkpoint", 0, 0, INT64_MAX, "activation checkpointing: bit i checkpoints block i (0-62)"},
    {NULL, 0, 0, 0, NULL}};

/* Parameter tensors: 4 model-level then 12 per layer. */
#define NGLOBAL 4
#define PER_LAYER 12

struct layer_saved {
    uint64_t ln1_stats, ln1_cast, w_attn, b_attn, qkv, y, lse, softmax, att_mask, att_bf16;
    uint64_t w_aproj, b_aproj, aresid_mask, resid_a, ln2_stats, ln2_cast, w_fc, b_fc, fc, gelu;
    uint64_t w_mproj, b_mproj, mresid_mask, resid_m;
};

struct gpt {
    struct wl w;
    struct gpt_sites sites;
    uint64_t L, H, NH, S, B, V;
    int flash;
    uint64_t seqvar;
    uint64_t ckpt; /* bit mask of checkpointed blocks */
    size_t nparams;
    uint64_t *psize, *param, *grad, *exp_avg, *exp_avg_sq;
    struct layer_saved *ls;
    uint64_t x0, batch, targets, logits, loss; /* live across the loop like Python variables */
    uint64_t T, Sn;                            /* tokens and sequence length this step */
};

#define LS(g, l, site) ((g)->sites.layer[(size_t)(l) * L_NSITES + (site)])
#define GS(g, site) ((g)->sites.global[site])

static uint64_t *param_ref(struct gpt *g, uint64_t *arr, uint64_t l, int j)
{
    return &arr[NGLOBAL + l * PER_LAYER + (uint64_t)j];
}

static int gpt_alloc_tables(struct gpt *g)
{
    g->nparams = NGLOBAL + (size_t)g->L * PER_LAYER;
    g->psize = calloc(g->nparams, sizeof *g->psize);
    g->param = calloc(g->nparams, sizeof *g->param);
    g->grad = calloc(g->nparams, sizeof *g->grad);
    g->exp_avg = calloc(g->nparams, sizeof *g->exp_avg);
    g->exp_avg_sq = calloc(g->nparams, sizeof *g->exp_avg_sq);
    g->ls = calloc((size_t)g->L, sizeof *g->ls);
    if (!g->psize || !g->param || !g->grad || !g->exp_avg || !g->exp_avg_sq || !g->ls)
        return MH_ENOMEM;
    uint64_t H = g->H;
    g->psize[0] = g->V * H * 4;
    g->psize[1] = g->S * H * 4;
    g->psize[2] = g->psize[3] = H * 4;
    static const uint64_t mult[PER_LAYER][2] = {{1, 0}, {1, 0}, {3, 1}, {3, 0}, {1, 1}, {1, 0},
                                                {1, 0}, {1, 0}, {4, 1}, {4, 0}, {4, 1}, {1, 0}};
    for (uint64_t l = 0; l < g->L; l++)
        for (int j = 0; j < PER_LAYER; j++)
            *param_ref(g, g->psize, l, j) = mult[j][0] * H * (mult[j][1] ? H : 1) * 4;
    return 0;
}

static void gpt_free_tables(struct gpt *g)
{
    free(g->psize);
    free(g->param);
    free(g->grad);
    free(g->exp_avg);
    free(g->exp_avg_sq);
    free(g->ls);
}

static void init_params(struct gpt *g)
{
    for (size_t i = 0; i < g->nparams; i++)
        g->param[i] = mh__wl_alloc(&g->w, g->psize[i], GS(g, G_INIT));
}

/* One linear layer's bf16 weight and bias casts (autocast). */
static void cast_weight(struct gpt *g, uint64_t l, int pw, struct wl_site site, uint64_t *w,
                        uint64_t *b)
{
    *w = mh__wl_alloc(&g->w, *param_ref(g, g->psize, l, pw) / 2, site);
    *b = mh__wl_alloc(&g->w, *param_ref(g, g->psize, l, pw + 1) / 2, site);
}

static void attention_fwd(struct gpt *g, uint64_t l, struct layer_saved *s)
{
    struct wl *w = &g->w;
    uint64_t T = g->T, H = g->H, att = g->B * g->NH * g->Sn * g->Sn;
    s->ln1_cast = mh__wl_alloc(w, T * H * 2, LS(g, l, L_LN1_CAST));
    cast_weight(g, l, 2, LS(g, l, L_ATTN_WCAST), &s->w_attn, &s->b_attn);
    s->qkv = mh__wl_alloc(w, T * 3 * H * 2, LS(g, l, L_QKV));
    if (g->flash) {
        s->y = mh__wl_alloc(w, T * H * 2, LS(g, l, L_SDPA));
        s->lse = mh__wl_alloc(w, g->B * g->NH * g->Sn * 4, LS(g, l, L_SDPA_LSE));
    } else {
        uint64_t scores = mh__wl_alloc(w, att * 2, LS(g, l, L_SCORES));
        uint64_t masked = mh__wl_alloc(w, att * 2, LS(g, l, L_MASKED));
        mh__wl_free(w, &scores);
        s->softmax = mh__wl_alloc(w, att * 4, LS(g, l, L_SOFTMAX));
        mh__wl_free(w, &masked);
        s->att_mask = mh__wl_alloc(w, att, LS(g, l, L_ATT_MASK));
        uint64_t drop = mh__wl_alloc(w, att * 4, LS(g, l, L_ATT_DROP));
        s->att_bf16 = mh__wl_alloc(w, att * 2, LS(g, l, L_ATT_BF16));
        mh__wl_free(w, &drop);
        s->y = mh__wl_alloc(w, T * H * 2, LS(g, l, L_ATT_BF16));
    }
    cast_weight(g, l, 4, LS(g, l, L_APROJ_WCAST), &s->w_aproj, &s->b_aproj);
    uint64_t proj = mh__wl_alloc(w, T * H * 2, LS(g, l, L_APROJ));
    s->aresid_mask = mh__wl_alloc(w, T * H, LS(g, l, L_ARESID_MASK));
    uint64_t drop = mh__wl_alloc(w, T * H * 2, LS(g, l, L_ARESID_DROP));
    mh__wl_free(w, &proj);
    s->resid_a = mh__wl_alloc(w, T * H * 4, LS(g, l, L_ARESID_ADD));
    mh__wl_free(w, &drop);
}

static void mlp_fwd(struct gpt *g, uint64_t l, struct layer_saved *s)
{
    struct wl *w = &g->w;
    uint64_t T = g->T, H = g->H;
    uint64_t ln = mh__wl_alloc(w, T * H * 4, LS(g, l, L_LN2));
    s->ln2_stats = mh__wl_alloc(w, T * 8, LS(g, l, L_LN2_STATS));
    s->ln2_cast = mh__wl_alloc(w, T * H * 2, LS(g, l, L_LN2_CAST));
    mh__wl_free(w, &ln);
    cast_weight(g, l, 8, LS(g, l, L_FC_WCAST), &s->w_fc, &s->b_fc);
    s->fc = mh__wl_alloc(w, T * 4 * H * 2, LS(g, l, L_FC));
    s->gelu = mh__wl_alloc(w, T * 4 * H * 2, LS(g, l, L_GELU));
    cast_weight(g, l, 10, LS(g, l, L_MPROJ_WCAST), &s->w_mproj, &s->b_mproj);
    uint64_t proj = mh__wl_alloc(w, T * H * 2, LS(g, l, L_MPROJ));
    s->mresid_mask = mh__wl_alloc(w, T * H, LS(g, l, L_MRESID_MASK));
    uint64_t drop = mh__wl_alloc(w, T * H * 2, LS(g, l, L_MRESID_DROP));
    mh__wl_free(w, &proj);
    s->resid_m = mh__wl_alloc(w, T * H * 4, LS(g, l, L_MRESID_ADD));
    mh__wl_free(w, &drop);
}

/* Activation checkpointing (torch.utils.checkpoint, non-reentrant) of a
 * block: its forward runs without keeping what autograd would save, so each
 * sub-block drops its saved tensors when it ends (the residual stream
 * between them lives until the MLP's residual add); the block's output is
 * kept as the next block's input. Before the block's backward the forward
 * is recomputed, which re-creates the saved tensors (and a duplicate output,
 * dropped at once). */
static int checkpointed(const struct gpt *g, uint64_t l)
{
    return l < 63 && (g->ckpt >> l & 1u);
}

static void drop_attention_saved(struct gpt *g, struct layer_saved *s)
{
    uint64_t *t[] = {&s->ln1_stats, &s->ln1_cast, &s->w_attn,  &s->b_attn,   &s->qkv,
                     &s->y,         &s->lse,      &s->softmax, &s->att_mask, &s->att_bf16,
                     &s->w_aproj,   &s->b_aproj,  &s->aresid_mask};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        mh__wl_free(&g->w, t[i]);
}

static void drop_mlp_saved(struct gpt *g, struct layer_saved *s)
{
    uint64_t *t[] = {&s->ln2_stats, &s->ln2_cast, &s->w_fc,        &s->b_fc,   &s->fc,
                     &s->gelu,      &s->w_mproj,  &s->b_mproj,     &s->mresid_mask, &s->resid_a};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        mh__wl_free(&g->w, t[i]);
}

static void recompute(struct gpt *g, uint64_t l)
{
    struct wl *w = &g->w;
    struct layer_saved *s = &g->ls[l];
    uint64_t ln = mh__wl_alloc(w, g->T * g->H * 4, LS(g, l, L_LN1));
    s->ln1_stats = mh__wl_alloc(w, g->T * 8, LS(g, l, L_LN1_STATS));
    attention_fwd(g, l, s);
    mh__wl_free(w, &ln);
    mlp_fwd(g, l, s);
    mh__wl_free(w, &s->resid_m);
}

static void forward(struct gpt *g, uint64_t *lnf_stats, uint64_t *lnf_cast, uint64_t *w_head,
                    uint64_t *logsm)
{
    struct wl *w = &g->w;
    uint64_t T = g->T, H = g->H, V = g->V;
    uint64_t tok = mh__wl_alloc(w, T * H * 4, GS(g, G_TOK_EMB));
    uint64_t pos = mh__wl_alloc(w, g->Sn * H * 4, GS(g, G_POS_EMB));
    uint64_t sum = mh__wl_alloc(w, T * H * 4, GS(g, G_EMB_ADD));
    mh__wl_free(w, &tok);
    mh__wl_free(w, &pos);
    uint64_t mask = mh__wl_alloc(w, T * H, GS(g, G_EMB_MASK));
    g->x0 = mh__wl_alloc(w, T * H * 4, GS(g, G_EMB_DROP));
    mh__wl_free(w, &sum);
    mh__wl_free(w, &mask); /* p = 0 at the embedding in practice: mask not kept */
    for (uint64_t l = 0; l < g->L; l++) {
        struct layer_saved *s = &g->ls[l];
        uint64_t ln = mh__wl_alloc(w, T * H * 4, LS(g, l, L_LN1));
        s->ln1_stats = mh__wl_alloc(w, T * 8, LS(g, l, L_LN1_STATS));
        attention_fwd(g, l, s);
        mh__wl_free(w, &ln);
        if (checkpointed(g, l))
            drop_attention_saved(g, s);
        mlp_fwd(g, l, s);
        if (checkpointed(g, l))
            drop_mlp_saved(g, s);
    }
    uint64_t lnf = mh__wl_alloc(w, T * H * 4, GS(g, G_LNF));
    *lnf_stats = mh__wl_alloc(w, T * 8, GS(g, G_LNF_STATS));
    *lnf_cast = mh__wl_alloc(w, T * H * 2, GS(g, G_LNF_CAST));
    mh__wl_free(w, &lnf);
    *w_head = mh__wl_alloc(w, V * H * 2, GS(g, G_HEAD_WCAST));
    uint64_t logits = mh__wl_alloc(w, T * V * 2, GS(g, G_LOGITS));
    mh__wl_free(w, &g->logits); /* the previous step's `logits` variable is rebound */
    g->logits = logits;
    uint64_t f32 = mh__wl_alloc(w, T * V * 4, GS(g, G_LOGITS_F32));
    *logsm = mh__wl_alloc(w, T * V * 4, GS(g, G_LOGSOFTMAX));
    mh__wl_free(w, &f32);
    uint64_t loss = mh__wl_alloc(w, 4, GS(g, G_LOSS));
    mh__wl_free(w, &g->loss);
    g->loss = loss;
}

/* Creates (first use this step) a parameter's fp32 gradient from a bf16 one. */
static void param_grad(struct gpt *g, size_t idx, struct wl_site site)
{
    struct wl *w = &g->w;
    uint64_t half = mh__wl_alloc(w, g->psize[idx] / 2, site);
    if (!g->grad[idx])
        g->grad[idx] = mh__wl_alloc(w, g->psize[idx], site);
    mh__wl_free(w, &half);
}

static void linear_bwd(struct gpt *g, uint64_t l, int pw, uint64_t in_bytes, struct wl_site site,
                       uint64_t *w_cast, uint64_t *b_cast, uint64_t *saved_in, uint64_t *gin)
{
    *gin = mh__wl_alloc(&g->w, in_bytes, site);
    param_grad(g, NGLOBAL + (size_t)l * PER_LAYER + (size_t)pw, site);
    param_grad(g, NGLOBAL + (size_t)l * PER_LAYER + (size_t)pw + 1, site);
    mh__wl_free(&g->w, w_cast);
    mh__wl_free(&g->w, b_cast);
    mh__wl_free(&g->w, saved_in);
}

/* Layer norm backward and the residual gradient accumulation. */
static void ln_bwd(struct gpt *g, uint64_t l, int pw, struct wl_site site, uint64_t *gx,
                   uint64_t *stats, uint64_t *residual_grad)
{
    struct wl *w = &g->w;
    uint64_t TH = g->T * g->H;
    uint64_t g32 = mh__wl_alloc(w, TH * 4, site);
    mh__wl_free(w, gx);
    uint64_t gln = mh__wl_alloc(w, TH * 4, site);
    param_grad(g, NGLOBAL + (size_t)l * PER_LAYER + (size_t)pw, site);
    param_grad(g, NGLOBAL + (size_t)l * PER_LAYER + (size_t)pw + 1, site);
    mh__wl_free(w, stats);
    mh__wl_free(w, &g32);
    uint64_t acc = mh__wl_alloc(w, TH * 4, LS(g, l, L_BWD_BLOCK));
    mh__wl_free(w, residual_grad);
    mh__wl_free(w, &gln);
    *residual_grad = acc;
}

static void layer_bwd(struct gpt *g, uint64_t l, uint64_t *rg)
{
    struct wl *w = &g->w;
    struct layer_saved *s = &g->ls[l];
    uint64_t T = g->T, H = g->H, att = g->B * g->NH * g->Sn * g->Sn;
    struct wl_site mlp = LS(g, l, L_BWD_MLP), at = LS(g, l, L_BWD_ATTN);
    uint64_t gd = mh__wl_alloc(w, T * H * 2, mlp), gi, gg, gx;
    mh__wl_free(w, &s->mresid_mask);
    linear_bwd(g, l, 10, T * 4 * H * 2, mlp, &s->w_mproj, &s->b_mproj, &s->gelu, &gi);
    mh__wl_free(w, &gd);
    gg = mh__wl_alloc(w, T * 4 * H * 2, mlp);
    mh__wl_free(w, &gi);
    mh__wl_free(w, &s->fc);
    linear_bwd(g, l, 8, T * H * 2, mlp, &s->w_fc, &s->b_fc, &s->ln2_cast, &gx);
    mh__wl_free(w, &gg);
    ln_bwd(g, l, 6, LS(g, l, L_BWD_LN2), &gx, &s->ln2_stats, rg);
    mh__wl_free(w, &s->resid_a);

    gd = mh__wl_alloc(w, T * H * 2, at);
    mh__wl_free(w, &s->aresid_mask);
    linear_bwd(g, l, 4, T * H * 2, at, &s->w_aproj, &s->b_aproj, &s->y, &gi);
    mh__wl_free(w, &gd);
    if (!g->flash) {
        uint64_t ga = mh__wl_alloc(w, att * 2, at);
        mh__wl_free(w, &s->att_bf16);
        uint64_t gs = mh__wl_alloc(w, att * 4, at);
        mh__wl_free(w, &ga);
        mh__wl_free(w, &s->att_mask);
        uint64_t gsc = mh__wl_alloc(w, att * 2, at);
        mh__wl_free(w, &gs);
        mh__wl_free(w, &s->softmax);
        mh__wl_free(w, &gsc);
    }
    gg = mh__wl_alloc(w, T * 3 * H * 2, at);
    mh__wl_free(w, &gi);
    mh__wl_free(w, &s->lse);
    mh__wl_free(w, &s->qkv);
    linear_bwd(g, l, 2, T * H * 2, at, &s->w_attn, &s->b_attn, &s->ln1_cast, &gx);
    mh__wl_free(w, &gg);
    ln_bwd(g, l, 0, LS(g, l, L_BWD_LN1), &gx, &s->ln1_stats, rg);
}

static void backward(struct gpt *g, uint64_t *lnf_stats, uint64_t *lnf_cast, uint64_t *w_head,
                     uint64_t *logsm)
{
    struct wl *w = &g->w;
    uint64_t T = g->T, H = g->H, V = g->V;
    uint64_t g1 = mh__wl_alloc(w, T * V * 4, GS(g, G_BWD_LOSS));
    uint64_t g2 = mh__wl_alloc(w, T * V * 4, GS(g, G_BWD_LOSS));
    mh__wl_free(w, &g1);
    mh__wl_free(w, logsm);
    uint64_t g3 = mh__wl_alloc(w, T * V * 2, GS(g, G_BWD_HEAD));
    mh__wl_free(w, &g2);
    uint64_t gx = mh__wl_alloc(w, T * H * 2, GS(g, G_BWD_HEAD));
    param_grad(g, 0, GS(g, G_BWD_HEAD));
    mh__wl_free(w, &g3);
    mh__wl_free(w, w_head);
    mh__wl_free(w, lnf_cast);
    uint64_t rg = mh__wl_alloc(w, T * H * 4, GS(g, G_BWD_LNF));
    mh__wl_free(w, &gx);
    param_grad(g, 2, GS(g, G_BWD_LNF));
    param_grad(g, 3, GS(g, G_BWD_LNF));
    mh__wl_free(w, lnf_stats);
    mh__wl_free(w, &g->ls[g->L - 1].resid_m);
    for (uint64_t l = g->L; l-- > 0;) {
        if (checkpointed(g, l))
            recompute(g, l);
        layer_bwd(g, l, &rg);
        if (l > 0)
            mh__wl_free(w, &g->ls[l - 1].resid_m);
    }
    mh__wl_free(w, &g->x0);
    /* embedding backward: a dense V x H gradient added into the tied weight */
    uint64_t emb = mh__wl_alloc(w, g->psize[0], GS(g, G_BWD_EMB));
    mh__wl_free(w, &emb);
    param_grad(g, 1, GS(g, G_BWD_EMB));
    mh__wl_free(w, &rg);
}

static void optimizer_step(struct gpt *g)
{
    struct wl *w = &g->w;
    for (size_t i = 0; i < g->nparams; i++) {
        if (!g->exp_avg[i]) {
            g->exp_avg[i] = mh__wl_alloc(w, g->psize[i], GS(g, G_OPT_INIT));
            g->exp_avg_sq[i] = mh__wl_alloc(w, g->psize[i], GS(g, G_OPT_INIT));
        }
    }
    /* torch._foreach_sqrt(exp_avg_sqs): one temporary per parameter, alive together */
    uint64_t *tmp = calloc(g->nparams, sizeof *tmp);
    if (!tmp) {
        w->stopped = 1;
        w->err = MH_ENOMEM;
        return;
    }
    for (size_t i = 0; i < g->nparams; i++)
        tmp[i] = mh__wl_alloc(w, g->psize[i], GS(g, G_OPT_TEMP));
    for (size_t i = 0; i < g->nparams; i++)
        mh__wl_free(w, &tmp[i]);
    free(tmp);
    /* zero_grad(set_to_none=True) */
    for (size_t i = 0; i < g->nparams; i++)
        mh__wl_free(w, &g->grad[i]);
}

static void train_step(struct gpt *g)
{
    struct wl *w = &g->w;
    double u = mh__wl_uniform(w);
    uint64_t cut = (uint64_t)(u * (double)(g->S * g->seqvar) / 100.0);
    g->Sn = (g->S - cut) / 64 * 64;
    if (g->Sn < 64)
        g->Sn = g->S < 64 ? g->S : 64;
    g->T = g->B * g->Sn;
    mh__wl_step(w, 1);
    /* the batch is loaded before the forward pass (category "input") */
    uint64_t batch = mh__wl_alloc(w, g->T * 8, GS(g, G_BATCH));
    uint64_t targets = mh__wl_alloc(w, g->T * 8, GS(g, G_BATCH));
    mh__wl_free(w, &g->batch);
    mh__wl_free(w, &g->targets);
    g->batch = batch;
    g->targets = targets;
    mh__wl_phase(w, MH_PHASE_FORWARD);
    uint64_t lnf_stats = 0, lnf_cast = 0, w_head = 0, logsm = 0;
    forward(g, &lnf_stats, &lnf_cast, &w_head, &logsm);
    mh__wl_phase(w, MH_PHASE_BACKWARD);
    backward(g, &lnf_stats, &lnf_cast, &w_head, &logsm);
    mh__wl_phase(w, MH_PHASE_OPTIMIZER);
    optimizer_step(g);
    mh__wl_step(w, 0);
}

static int gpt_run(struct mh__sim *s, const int64_t *v, uint64_t steps, uint64_t seed,
                   struct mh__workload_result *res)
{
    struct gpt g;
    memset(&g, 0, sizeof g);
    mh__wl_init(&g.w, s, steps, seed, res);
    g.L = (uint64_t)v[P_LAYERS];
    g.H = (uint64_t)v[P_HIDDEN];
    g.NH = (uint64_t)v[P_HEADS];
    g.S = (uint64_t)v[P_SEQ];
    g.B = (uint64_t)v[P_BATCH];
    g.V = (uint64_t)v[P_VOCAB];
    g.flash = (int)v[P_FLASH];
    g.seqvar = (uint64_t)v[P_SEQVAR];
    g.ckpt = (uint64_t)v[P_CKPT];
    int rc = gpt_alloc_tables(&g);
    if (rc == 0)
        rc = mh__gpt_sites_init(&g.w, &g.sites, (int)g.L);
    if (rc == 0) {
        init_params(&g);
        for (uint64_t i = 0; i < steps && !g.w.stopped; i++)
            train_step(&g);
        rc = mh__wl_finish(&g.w);
    }
    mh__gpt_sites_free(&g.sites);
    gpt_free_tables(&g);
    return rc;
}

const struct mh__workload mh__wl_gpt = {
    "gpt", "GPT-style transformer LM training (bf16 autocast, AdamW)", gpt_params, gpt_run};
