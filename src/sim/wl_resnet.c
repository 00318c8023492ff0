/* wl_resnet.c - the "resnet" workload: a ResNet-style CNN trained with SGD
 * with momentum and weight decay (foreach), as a tensor-lifetime model.
 * Each conv saves its output for batch norm and the normalised, in-place
 * ReLU'd output for the next conv; cuDNN workspaces come and go around every
 * conv with data-dependent sizes; backward walks the convs in reverse,
 * freeing what each saved and creating gradients; momentum buffers appear at
 * the first optimizer step; weight decay makes foreach temporaries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/error.h"
#include "wl_int.h"
#include "grow.h"

enum { P_DEPTH, P_BATCH, P_IMAGE, P_WIDTH, P_CLASSES, P_AMP, P_COUNT };

static const struct mh__workload_param resnet_params[] = {
    {"depth", 50, 18, 152, "18 or 34 (basic blocks), 50, 101 or 152 (bottlenecks)"},
    {"batch", 64, 1, 1 << 16, "images per step"},
    {"image", 224, 32, 4096, "image side in pixels"},
    {"width", 64, 8, 1024, "channels of the first stage"},
    {"classes", 1000, 2, 1 << 20, "output classes"},
    {"amp", 0, 0, 1, "1: fp16 autocast activations"},
    {NULL, 0, 0, 0, NULL}};

struct conv {
    uint64_t cin, cout, k, hw;      /* hw: output side */
    struct wl_site fwd, bn, ws, bwd;
    uint64_t out, bn_out, stats;    /* saved */
    uint64_t w, g, mom;             /* weight, grad, momentum (fp32) */
    int block_end;                  /* last conv of a block: residual add follows */
};

struct resnet {
    struct wl w;
    struct conv *c;
    size_t n, cap;
    uint64_t N, act; /* batch, bytes per activation element */
    uint64_t classes, feat;
    struct wl_site s_init, s_data, s_add, s_pool, s_fc, s_loss, s_bwd_head, s_opt_init, s_opt_tmp;
    uint64_t fc_w, fc_g, fc_mom;
};

#define CALL {"torch/nn/modules/module.py", "Module._call_impl", 1762}
#define MAIN_TAIL {"train_cnn.py", "train_step", 64}, {"train_cnn.py", "<module>", 101}
#define BWD_FRAMES {"torch/autograd/graph.py", "_engine_run_backward", 825}, {"torch/autograd/__init__.py", "backward", 347}, {"torch/_tensor.py", "Tensor.backward", 626}, {"train_cnn.py", "train_step", 66}, {"train_cnn.py", "<module>", 101}

static int add_conv(struct resnet *r, const char *name, int stage, uint64_t cin, uint64_t cout,
                    uint64_t k, uint64_t hw, uint32_t line)
{
    if (MH__GROW(r->c, r->n, r->cap, 64) < 0)
        return MH_ENOMEM;
    struct conv *c = &r->c[r->n++];
    memset(c, 0, sizeof *c);
    c->cin = cin;
    c->cout = cout;
    c->k = k;
    c->hw = hw;
    char meta[64], bn[64];
    snprintf(meta, sizeof meta, "%s", name);
    snprintf(bn, sizeof bn, "%s", name);
    /* "layer1.0.conv2" -> "layer1.0.bn2", "conv1" -> "bn1" */
    char *last = strrchr(bn, '.');
    last = last ? last + 1 : bn;
    if (strncmp(last, "conv", 4) == 0) {
        memcpy(last, "bn", 2);
        memmove(last + 2, last + 4, strlen(last + 4) + 1);
    }
    struct wl_frame f[] = {{"torch/nn/modules/conv.py", "Conv2d._conv_forward", 549}, CALL,
                           {"resnet.py", "Bottleneck.forward", line}, CALL,
                           {"torch/nn/modules/container.py", "Sequential.forward", 250}, CALL,
                           {"resnet.py", "ResNet.forward", 270 + (uint32_t)stage}, CALL, MAIN_TAIL};
    struct wl_frame fb[] = {{"torch/nn/functional.py", "batch_norm", 2822},
                            {"torch/nn/modules/batchnorm.py", "BatchNorm2d.forward", 193}, CALL,
                            {"resnet.py", "Bottleneck.forward", line + 1}, CALL,
                            {"torch/nn/modules/container.py", "Sequential.forward", 250}, CALL,
                            {"resnet.py", "ResNet.forward", 270 + (uint32_t)stage}, CALL, MAIN_TAIL};
    struct wl_frame bw[] = {BWD_FRAMES};
    size_t nf = sizeof f / sizeof *f;
    if (stage == 0) {
        f[2] = (struct wl_frame){"resnet.py", "ResNet.forward", 266};
        fb[3] = (struct wl_frame){"resnet.py", "ResNet.forward", 267};
    }
    c->fwd = mh__wl_site(&r->w, f, nf, meta);
    c->ws = c->fwd;
    c->bn = mh__wl_site(&r->w, fb, sizeof fb / sizeof *fb, bn);
    c->bwd = mh__wl_site(&r->w, bw, sizeof bw / sizeof *bw, meta);
    return 0;
}

static int build(struct resnet *r, const int64_t *v)
{
    static const int counts[][4] = {{2, 2, 2, 2}, {3, 4, 6, 3}, {3, 4, 6, 3}, {3, 4, 23, 3},
                                    {3, 8, 36, 3}};
    int depth = (int)v[P_DEPTH];
    int idx = depth <= 18 ? 0 : depth <= 34 ? 1 : depth <= 50 ? 2 : depth <= 101 ? 3 : 4;
    int bottleneck = depth >= 50;
    uint64_t width = (uint64_t)v[P_WIDTH], hw = (uint64_t)v[P_IMAGE] / 2, cin = width;
    char name[64];
    int rc = add_conv(r, "conv1", 0, 3, width, 7, hw, 266);
    hw /= 2; /* max pool */
    for (int s = 0; s < 4 && rc == 0; s++) {
        uint64_t planes = width << s, out = bottleneck ? planes * 4 : planes;
        for (int b = 0; b < counts[idx][s] && rc == 0; b++) {
            if (b == 0 && s > 0)
                hw = (hw + 1) / 2;
            const char *cn[] = {"conv1", "conv2", "conv3"};
            int nconv = bottleneck ? 3 : 2;
            for (int k = 0; k < nconv && rc == 0; k++) {
                snprintf(name, sizeof name, "layer%d.%d.%s", s + 1, b, cn[k]);
                uint64_t co = k == nconv - 1 ? out : planes;
                uint64_t ks = bottleneck && k != 1 ? 1 : 3;
                rc = add_conv(r, name, s + 1, cin, co, ks, hw, 100 + 2 * (uint32_t)k);
                cin = co;
            }
            if (rc == 0 && b == 0) {
                snprintf(name, sizeof name, "layer%d.%d.downsample.0", s + 1, b);
                rc = add_conv(r, name, s + 1, cin, out, 1, hw, 110);
            }
            if (rc == 0)
                r->c[r->n - 1].block_end = 1;
        }
    }
    r->feat = cin;
    return rc;
}

static void model_sites(struct resnet *r)
{
    struct wl *w = &r->w;
    struct wl_frame init[] = {{"torch/nn/modules/module.py", "Module._apply", 942},
                              {"torch/nn/modules/module.py", "Module.to", 1340},
                              {"train_cnn.py", "<module>", 40}};
    struct wl_frame data[] = {{"train_cnn.py", "train_step", 60}, {"train_cnn.py", "<module>", 101}};
    struct wl_frame add[] = {{"resnet.py", "Bottleneck.forward", 112}, CALL,
                             {"torch/nn/modules/container.py", "Sequential.forward", 250}, CALL,
                             {"resnet.py", "ResNet.forward", 272}, CALL, MAIN_TAIL};
    struct wl_frame pool[] = {{"resnet.py", "ResNet.forward", 278}, CALL, MAIN_TAIL};
    struct wl_frame fc[] = {{"torch/nn/modules/linear.py", "Linear.forward", 125}, CALL,
                            {"resnet.py", "ResNet.forward", 280}, CALL, MAIN_TAIL};
    struct wl_frame loss[] = {{"torch/nn/functional.py", "cross_entropy", 3494},
                              {"train_cnn.py", "train_step", 65}, {"train_cnn.py", "<module>", 101}};
    struct wl_frame bwd[] = {BWD_FRAMES};
    struct wl_frame oi[] = {{"torch/optim/sgd.py", "SGD._init_group", 97},
                            {"torch/optim/sgd.py", "_multi_tensor_sgd", 401},
                            {"torch/optim/sgd.py", "SGD.step", 125},
                            {"torch/optim/optimizer.py", "wrapper", 487},
                            {"train_cnn.py", "train_step", 67}, {"train_cnn.py", "<module>", 101}};
    struct wl_frame ot[] = {{"torch/optim/sgd.py", "_multi_tensor_sgd", 372},
                            {"torch/optim/sgd.py", "sgd", 300}, {"torch/optim/sgd.py", "SGD.step", 125},
                            {"torch/optim/optimizer.py", "wrapper", 487},
                            {"train_cnn.py", "train_step", 67}, {"train_cnn.py", "<module>", 101}};
#define SITE(fr, meta) mh__wl_site(w, fr, sizeof fr / sizeof *fr, meta)
    r->s_init = SITE(init, NULL);
    r->s_data = SITE(data, NULL);
    r->s_add = SITE(add, NULL);
    r->s_pool = SITE(pool, "avgpool");
    r->s_fc = SITE(fc, "fc");
    r->s_loss = SITE(loss, NULL);
    r->s_bwd_head = SITE(bwd, "fc");
    r->s_opt_init = SITE(oi, "optimizer.state");
    r->s_opt_tmp = SITE(ot, "optimizer");
#undef SITE
}

static uint64_t act_bytes(const struct resnet *r, const struct conv *c)
{
    return r->N * c->cout * c->hw * c->hw * r->act;
}

static uint64_t weight_bytes(const struct conv *c)
{
    return c->cin * c->cout * c->k * c->k * 4;
}

/* cuDNN workspace: algorithm-dependent, here 0.5x-2x of the output, capped. */
static uint64_t workspace(struct resnet *r, const struct conv *c)
{
    uint64_t ws = (uint64_t)((double)act_bytes(r, c) * (0.5 + 1.5 * mh__wl_uniform(&r->w)));
    return ws > 256ull << 20 ? 256ull << 20 : ws;
}

static void forward(struct resnet *r, uint64_t *input, uint64_t *logits, uint64_t *pooled)
{
    struct wl *w = &r->w;
    uint64_t prev_add = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct conv *c = &r->c[i];
        uint64_t ws = mh__wl_alloc(w, workspace(r, c), c->ws);
        c->out = mh__wl_alloc(w, act_bytes(r, c), c->fwd);
        mh__wl_free(w, &ws);
        c->stats = mh__wl_alloc(w, c->cout * 8, c->bn);
        c->bn_out = mh__wl_alloc(w, act_bytes(r, c), c->bn);
        if (c->block_end) {
            uint64_t sum = mh__wl_alloc(w, act_bytes(r, c), r->s_add);
            mh__wl_free(w, &prev_add);
            prev_add = sum;
        }
    }
    *pooled = mh__wl_alloc(w, r->N * r->feat * r->act, r->s_pool);
    mh__wl_free(w, &prev_add);
    *logits = mh__wl_alloc(w, r->N * r->classes * 4, r->s_fc);
    uint64_t lsm = mh__wl_alloc(w, r->N * r->classes * 4, r->s_loss);
    uint64_t loss = mh__wl_alloc(w, 4, r->s_loss);
    mh__wl_free(w, &lsm);
    mh__wl_free(w, &loss);
    (void)input;
}

static void backward(struct resnet *r, uint64_t *logits, uint64_t *pooled)
{
    struct wl *w = &r->w;
    uint64_t g = mh__wl_alloc(w, r->N * r->classes * 4, r->s_bwd_head);
    if (!r->fc_g)
        r->fc_g = mh__wl_alloc(w, r->feat * r->classes * 4, r->s_bwd_head);
    mh__wl_free(w, logits);
    uint64_t gp = mh__wl_alloc(w, r->N * r->feat * r->act, r->s_bwd_head);
    mh__wl_free(w, &g);
    mh__wl_free(w, pooled);
    uint64_t grad = 0;
    for (size_t i = r->n; i-- > 0;) {
        struct conv *c = &r->c[i];
        uint64_t gbn = mh__wl_alloc(w, act_bytes(r, c), c->bwd);
        mh__wl_free(w, &gp);
        mh__wl_free(w, &grad);
        mh__wl_free(w, &c->bn_out);
        mh__wl_free(w, &c->stats);
        uint64_t ws = mh__wl_alloc(w, workspace(r, c), c->bwd);
        uint64_t gin = mh__wl_alloc(w, c->cin == 3 ? 0 : r->N * c->cin * c->hw * c->hw * r->act, c->bwd);
        if (!c->g)
            c->g = mh__wl_alloc(w, weight_bytes(c), c->bwd);
        mh__wl_free(w, &ws);
        mh__wl_free(w, &gbn);
        mh__wl_free(w, &c->out);
        grad = gin;
    }
    mh__wl_free(w, &grad);
}

static void optimizer(struct resnet *r)
{
    struct wl *w = &r->w;
    for (size_t i = 0; i < r->n; i++)
        if (!r->c[i].mom)
            r->c[i].mom = mh__wl_alloc(w, weight_bytes(&r->c[i]), r->s_opt_init);
    if (!r->fc_mom)
        r->fc_mom = mh__wl_alloc(w, r->feat * r->classes * 4, r->s_opt_init);
    /* grads = torch._foreach_add(grads, params, alpha=weight_decay) */
    uint64_t *tmp = calloc(r->n + 1, sizeof *tmp);
    if (!tmp) {
        w->stopped = 1;
        w->err = MH_ENOMEM;
        return;
    }
    for (size_t i = 0; i < r->n; i++)
        tmp[i] = mh__wl_alloc(w, weight_bytes(&r->c[i]), r->s_opt_tmp);
    tmp[r->n] = mh__wl_alloc(w, r->feat * r->classes * 4, r->s_opt_tmp);
    for (size_t i = 0; i <= r->n; i++)
        mh__wl_free(w, &tmp[i]);
    free(tmp);
    for (size_t i = 0; i < r->n; i++)
        mh__wl_free(w, &r->c[i].g);
    mh__wl_free(w, &r->fc_g);
}

static int resnet_run(struct mh__sim *s, const int64_t *v, uint64_t steps, uint64_t seed,
                      struct mh__workload_result *res)
{
    struct resnet r;
    memset(&r, 0, sizeof r);
    mh__wl_init(&r.w, s, steps, seed, res);
    r.N = (uint64_t)v[P_BATCH];
    r.act = v[P_AMP] ? 2 : 4;
    r.classes = (uint64_t)v[P_CLASSES];
    int rc = build(&r, v);
    if (rc == 0) {
        model_sites(&r);
        for (size_t i = 0; i < r.n; i++)
            r.c[i].w = mh__wl_alloc(&r.w, weight_bytes(&r.c[i]), r.s_init);
        r.fc_w = mh__wl_alloc(&r.w, r.feat * r.classes * 4, r.s_init);
        uint64_t img = (uint64_t)v[P_IMAGE], input = 0, labels = 0;
        for (uint64_t i = 0; i < steps && !r.w.stopped; i++) {
            mh__wl_step(&r.w, 1);
            mh__wl_phase(&r.w, MH_PHASE_FORWARD);
            uint64_t in = mh__wl_alloc(&r.w, r.N * 3 * img * img * 4, r.s_data);
            uint64_t lb = mh__wl_alloc(&r.w, r.N * 8, r.s_data);
            mh__wl_free(&r.w, &input);
            mh__wl_free(&r.w, &labels);
            input = in;
            labels = lb;
            uint64_t logits = 0, pooled = 0;
            forward(&r, &input, &logits, &pooled);
            mh__wl_phase(&r.w, MH_PHASE_BACKWARD);
            backward(&r, &logits, &pooled);
            mh__wl_phase(&r.w, MH_PHASE_OPTIMIZER);
            optimizer(&r);
            mh__wl_step(&r.w, 0);
        }
        rc = mh__wl_finish(&r.w);
    }
    free(r.c);
    return rc;
}

const struct mh__workload mh__wl_resnet = {
    "resnet", "ResNet-style CNN training (SGD with momentum)", resnet_params, resnet_run};
