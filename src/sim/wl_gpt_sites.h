/* wl_gpt_sites.h - allocation sites of the GPT workload: which Python frames
 * and module path each tensor of wl_gpt.c is attributed to. Shared by
 * wl_gpt.c and wl_gpt_sites.c only. */
#ifndef MH_SIM_WL_GPT_SITES_H
#define MH_SIM_WL_GPT_SITES_H

#include "wl_int.h"

/* Per-layer forward sites. */
enum gpt_lsite {
    L_LN1, L_LN1_STATS, L_LN1_CAST, L_ATTN_WCAST, L_QKV, L_SDPA, L_SDPA_LSE, L_SCORES,
    L_MASKED, L_SOFTMAX, L_ATT_MASK, L_ATT_DROP, L_ATT_BF16, L_APROJ_WCAST, L_APROJ,
    L_ARESID_MASK, L_ARESID_DROP, L_ARESID_ADD, L_LN2, L_LN2_STATS, L_LN2_CAST, L_FC_WCAST, L_FC,
    L_GELU, L_MPROJ_WCAST, L_MPROJ, L_MRESID_MASK, L_MRESID_DROP, L_MRESID_ADD,
    /* backward, attributed per module */
    L_BWD_ATTN, L_BWD_MLP, L_BWD_LN1, L_BWD_LN2, L_BWD_BLOCK,
    L_NSITES
};

/* Model-level sites. */
enum gpt_gsite {
    G_INIT, G_BATCH, G_TOK_EMB, G_POS_EMB, G_EMB_ADD, G_EMB_MASK, G_EMB_DROP, G_LNF, G_LNF_STATS,
    G_LNF_CAST, G_HEAD_WCAST, G_LOGITS, G_LOGITS_F32, G_LOGSOFTMAX, G_LOSS, G_BWD_LOSS,
    G_BWD_HEAD, G_BWD_LNF, G_BWD_EMB, G_OPT_INIT, G_OPT_TEMP, G_NSITES
};

struct gpt_sites {
    struct wl_site *layer; /* [layers * L_NSITES] */
    struct wl_site global[G_NSITES];
};

int mh__gpt_sites_init(struct wl *w, struct gpt_sites *s, int layers);
void mh__gpt_sites_free(struct gpt_sites *s);

#endif
