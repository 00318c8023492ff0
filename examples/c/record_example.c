/* record_example.c - records a small training loop through the public C API.
 *
 * A toy two-layer model trains for a few steps on device 0. The program
 * plays the caching allocator itself (a first-fit over a few segments using
 * PyTorch's rounding and split rules) and emits what PyTorch's allocator hook
 * would: segment allocations, allocations with stacks, frees, one free that
 * waits for a side stream (pending free), steps and phases. The demo and the
 * CLI tests use its output.
 *
 * usage: record_example [OUT.memhist]   (default: example.memhist) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhist/memhist.h"

#define MAX_PIECES 256
#define MIB (1024ull * 1024ull)

/* A free or used piece of a segment, kept in address order. */
struct piece {
    uint64_t addr, size;
    int used, small;
};

struct toy {
    struct mh_recorder *rec;
    struct piece pieces[MAX_PIECES];
    int npieces;
    uint64_t next_segment_addr, now;
    uint32_t stack_param, stack_fwd1, stack_fwd2, stack_tmp, stack_loss, stack_grad, stack_adam;
};

static uint64_t tick(struct toy *t, uint64_t ns)
{
    t->now += ns;
    return t->now;
}

static void emit(struct toy *t, unsigned kind, uint64_t addr, uint64_t size, uint64_t stream,
                 uint32_t stack, uint32_t aux)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)kind;
    ev.time_ns = tick(t, 2000);
    ev.addr = addr;
    ev.size = size;
    ev.stream = stream;
    ev.stack = stack;
    ev.aux = aux;
    ev.thread = mh_thread_id();
    mh_emit(t->rec, &ev);
}

static uint64_t round_request(uint64_t size)
{
    return size < 512 ? 512 : (size + 511) / 512 * 512;
}

static void insert_piece(struct toy *t, int at, struct piece p)
{
    memmove(&t->pieces[at + 1], &t->pieces[at], (size_t)(t->npieces - at) * sizeof p);
    t->pieces[at] = p;
    t->npieces++;
}

/* A new segment for a rounded request, as cudaMalloc would give it. */
static int new_segment(struct toy *t, uint64_t rounded, int small, uint32_t stack)
{
    uint64_t seg = small                ? 2 * MIB
                   : rounded < 10 * MIB ? 20 * MIB
                                        : (rounded + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
    struct piece p = {t->next_segment_addr, seg, 0, small};
    t->next_segment_addr += seg + 2 * MIB;
    emit(t, MH_EV_SEGMENT_ALLOC, p.addr, seg, 0, stack, 0);
    insert_piece(t, t->npieces, p);
    return t->npieces - 1;
}

static uint64_t toy_alloc(struct toy *t, uint64_t size, uint32_t stack)
{
    uint64_t rounded = round_request(size);
    int small = rounded <= MIB, at = -1;
    for (int i = 0; i < t->npieces && at < 0; i++)
        if (!t->pieces[i].used && t->pieces[i].small == small && t->pieces[i].size >= rounded)
            at = i;
    if (at < 0)
        at = new_segment(t, rounded, small, stack);
    struct piece *p = &t->pieces[at];
    uint64_t rest = p->size - rounded;
    if (small ? rest >= 512 : rest > MIB) {
        struct piece tail = {p->addr + rounded, rest, 0, small};
        p->size = rounded;
        insert_piece(t, at + 1, tail);
        p = &t->pieces[at];
    }
    p->used = 1;
    emit(t, MH_EV_ALLOC, p->addr, size, 0, stack, 0);
    return p->addr;
}

/* Frees a block; merges with free neighbours of the same segment. */
static void toy_release(struct toy *t, uint64_t addr)
{
    int i = 0;
    while (i < t->npieces && t->pieces[i].addr != addr)
        i++;
    if (i == t->npieces)
        return;
    t->pieces[i].used = 0;
    if (i + 1 < t->npieces && !t->pieces[i + 1].used &&
        t->pieces[i].addr + t->pieces[i].size == t->pieces[i + 1].addr) {
        t->pieces[i].size += t->pieces[i + 1].size;
        memmove(&t->pieces[i + 1], &t->pieces[i + 2],
                (size_t)(t->npieces - i - 2) * sizeof t->pieces[0]);
        t->npieces--;
    }
    if (i > 0 && !t->pieces[i - 1].used &&
        t->pieces[i - 1].addr + t->pieces[i - 1].size == t->pieces[i].addr) {
        t->pieces[i - 1].size += t->pieces[i].size;
        memmove(&t->pieces[i], &t->pieces[i + 1],
                (size_t)(t->npieces - i - 1) * sizeof t->pieces[0]);
        t->npieces--;
    }
}

static void toy_free(struct toy *t, uint64_t addr, uint64_t size)
{
    emit(t, MH_EV_FREE_REQUESTED, addr, size, 0, 0, 0);
    emit(t, MH_EV_FREE_COMPLETED, addr, size, 0, 0, 0);
    toy_release(t, addr);
}

static uint32_t stack_of(struct mh_recorder *rec, const char *const *frames, int n)
{
    uint32_t ids[8];
    for (int i = 0; i < n; i++) {
        char file[64];
        const char *colon = strchr(frames[i], ':');
        snprintf(file, sizeof file, "%.*s", (int)(colon - frames[i]), frames[i]);
        const char *space = strchr(colon, ' ');
        ids[i] = (uint32_t)mh_intern_frame(rec, file, space + 1, (uint32_t)atoi(colon + 1));
    }
    return (uint32_t)mh_intern_stack(rec, ids, (size_t)n);
}

static void intern_stacks(struct toy *t)
{
    const char *param[] = {"model.py:12 Linear.__init__", "model.py:30 TwoLayer.__init__",
                           "train.py:51 main"};
    const char *fwd1[] = {"model.py:18 Linear.forward", "model.py:36 TwoLayer.forward",
                          "train.py:24 train_step", "train.py:60 main"};
    const char *fwd2[] = {"model.py:21 gelu", "model.py:37 TwoLayer.forward",
                          "train.py:24 train_step", "train.py:60 main"};
    const char *tmp[] = {"model.py:22 dropout", "model.py:37 TwoLayer.forward",
                         "train.py:24 train_step", "train.py:60 main"};
    const char *loss[] = {"train.py:25 train_step", "train.py:60 main"};
    const char *grad[] = {"autograd/engine.py:0 backward", "train.py:26 train_step",
                          "train.py:60 main"};
    const char *adam[] = {"optim/adam.py:101 _init_group", "train.py:27 train_step",
                          "train.py:60 main"};
    t->stack_param = stack_of(t->rec, param, 3);
    t->stack_fwd1 = stack_of(t->rec, fwd1, 4);
    t->stack_fwd2 = stack_of(t->rec, fwd2, 4);
    t->stack_tmp = stack_of(t->rec, tmp, 4);
    t->stack_loss = stack_of(t->rec, loss, 2);
    t->stack_grad = stack_of(t->rec, grad, 3);
    t->stack_adam = stack_of(t->rec, adam, 3);
}

#define NPARAM 4
static const uint64_t param_bytes[NPARAM] = {3 * MIB, 4096, 3 * MIB, 4096};

static void train_step(struct toy *t, int step, uint64_t grads[NPARAM], uint64_t states[2 * NPARAM])
{
    emit(t, MH_EV_STEP_BEGIN, 0, 0, 0, 0, (uint32_t)step);
    emit(t, MH_EV_PHASE, 0, 0, 0, 0, MH_PHASE_FORWARD);
    uint64_t act_bytes = (6 + (uint64_t)step % 2) * MIB; /* batches vary in length */
    uint64_t a1 = toy_alloc(t, act_bytes, t->stack_fwd1);
    uint64_t tmp = toy_alloc(t, 700 * 1024, t->stack_tmp);
    uint64_t a2 = toy_alloc(t, act_bytes, t->stack_fwd2);
    toy_free(t, tmp, 700 * 1024);
    uint64_t loss = toy_alloc(t, 4, t->stack_loss);
    emit(t, MH_EV_PHASE, 0, 0, 0, 0, MH_PHASE_BACKWARD);
    for (int i = NPARAM - 1; i >= 0; i--)
        grads[i] = toy_alloc(t, param_bytes[i], t->stack_grad);
    toy_free(t, a2, act_bytes);
    /* the first activation was also read by a copy on side stream 7: its
     * memory returns only once that stream's work is done */
    emit(t, MH_EV_FREE_REQUESTED, a1, act_bytes, 0, 0, 0);
    toy_free(t, loss, 4);
    emit(t, MH_EV_PHASE, 0, 0, 0, 0, MH_PHASE_OPTIMIZER);
    for (int i = 0; step == 1 && i < 2 * NPARAM; i++)
        states[i] = toy_alloc(t, param_bytes[i / 2], t->stack_adam);
    emit(t, MH_EV_FREE_COMPLETED, a1, act_bytes, 0, 0, 0);
    toy_release(t, a1);
    for (int i = 0; i < NPARAM; i++)
        toy_free(t, grads[i], param_bytes[i]);
    emit(t, MH_EV_STEP_END, 0, 0, 0, 0, (uint32_t)step);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "example.memhist";
    struct toy t;
    memset(&t, 0, sizeof t);
    t.next_segment_addr = 0x7f2a00000000ull;
    t.now = mh_clock_ns();
    int rc = mh_recorder_open(path, NULL, &t.rec);
    if (rc < 0) {
        fprintf(stderr, "record_example: %s: %s\n", path, mh_strerror(rc));
        return 1;
    }
    mh_recorder_set_meta(t.rec, "program", "examples/c/record_example");
    mh_recorder_set_device(t.rec, 0, "Example GPU", 16 * 1024 * MIB);
    intern_stacks(&t);
    uint64_t params[NPARAM], grads[NPARAM], states[2 * NPARAM];
    for (int i = 0; i < NPARAM; i++)
        params[i] = toy_alloc(&t, param_bytes[i], t.stack_param);
    for (int step = 1; step <= 4; step++) {
        train_step(&t, step, grads, states);
        mh_recorder_flush(t.rec); /* each step reaches the file as it ends */
    }
    (void)params;
    rc = mh_recorder_close(t.rec);
    if (rc < 0) {
        fprintf(stderr, "record_example: %s: %s\n", path, mh_strerror(rc));
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}
