/* bench_viz_plot.c - how fast `memhist plot` draws a timeline, next to
 * matplotlib drawing the same stacked timeline from the same data.
 *
 * Generates synthetic runs of 1 M and 10 M events (generator below),
 * times mh__plot_render on each (the whole plot: both passes over the file,
 * drawing and PNG encoding; wall and CPU time), then runs tests/bench/plot_matplotlib.py on the
 * same events and prints both times and the ratio as `name: value` lines.
 *
 *   bench_viz_plot [--events N] [--write FILE [--export FILE]] [--no-matplotlib]
 *
 * --write only writes a synthetic file (and, with --export, the flat table
 * for matplotlib) and exits: handy for looking at a realistic timeline. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memhist/memhist.h"
#include "plot.h"

#ifndef MH_SOURCE_DIR
#define MH_SOURCE_DIR "."
#endif

/* The generator: a synthetic transformer-like training run written with
 * mh_writer, for the benchmark and for looking at realistic timelines
 * without a GPU.
 *
 * Each step: forward allocates one activation per layer and site (attention,
 * MLP, layer norm) plus short-lived temporaries; backward frees the
 * activations in reverse order while allocating temporaries; the optimizer
 * touches its state. Parameters, gradients and optimizer state live in their
 * own segment. Activations are allocated LIFO from a set of 1 GiB segments
 * reserved as the first step grows, so the reserved curve rises in step 0
 * and then stays flat, as with the real caching allocator. Every block is a
 * multiple of 512 bytes above 1 MiB, so the model's rounding agrees with the
 * addresses. Optionally the events are also exported as a flat binary table
 * for the matplotlib comparison (plot_matplotlib.py reads it). */


#define GEN_LAYERS 24
#define GEN_SITES 4
#define GEN_SEG (1ull << 30)
#define GEN_MAX_SEGS 64

/* One row of the export: time in seconds, group (site) of the block or -1,
 * allocated and reserved deltas in bytes. */
struct gen_row {
    double t;
    int64_t group;
    int64_t d_alloc, d_reserved;
};

struct gen {
    struct mh_writer *w;
    FILE *export_fp;
    uint64_t t, events, limit;
    uint32_t site_stack[GEN_SITES + 4];
    uint64_t seg_addr[GEN_MAX_SEGS];
    int nsegs, cur_seg;
    uint64_t top;           /* bump pointer inside segment cur_seg */
    uint64_t stack_addr[GEN_LAYERS * GEN_SITES * 2 + 8];
    uint64_t stack_size[GEN_LAYERS * GEN_SITES * 2 + 8];
    int stack_seg[GEN_LAYERS * GEN_SITES * 2 + 8];
    int depth;
    uint64_t param_top;
};

static int gen_emit(struct gen *g, int kind, uint64_t addr, uint64_t size, uint32_t stack,
                    uint32_t aux, int64_t group, int64_t d_alloc, int64_t d_res)
{
    struct mh_event ev;
    memset(&ev, 0, sizeof ev);
    g->t += 2000 + (g->events * 7919) % 3000; /* 2-5 us apart */
    ev.time_ns = g->t;
    ev.kind = (uint8_t)kind;
    ev.addr = addr;
    ev.size = size;
    ev.stack = stack;
    ev.aux = aux;
    ev.device = 0;
    ev.stream = 7;
    g->events++;
    if (g->export_fp) {
        struct gen_row row = {g->t / 1e9, group, d_alloc, d_res};
        fwrite(&row, sizeof row, 1, g->export_fp);
    }
    return mh_writer_event(g->w, &ev);
}

static uint32_t gen_stack(struct mh_writer *w, const char *file, const char *func, uint32_t line)
{
    uint32_t f[3];
    f[0] = (uint32_t)mh_writer_intern_frame(w, "torch/nn/modules/module.py", "_call_impl", 1747);
    f[1] = (uint32_t)mh_writer_intern_frame(w, file, func, line);
    f[2] = (uint32_t)mh_writer_intern_frame(w, "train.py", "train_step", 88);
    return (uint32_t)mh_writer_intern_stack(w, f, 3);
}

static uint64_t gen_round(uint64_t size)
{
    return (size + 511) / 512 * 512;
}

/* LIFO allocation from the activation segments. */
static int gen_push(struct gen *g, uint64_t size, int site)
{
    uint64_t r = gen_round(size);
    if (g->top + r + (2u << 20) > GEN_SEG) {
        g->cur_seg++;
        g->top = 0;
    }
    if (g->cur_seg >= g->nsegs) {
        g->seg_addr[g->nsegs] = 0x7f0000000000ull + (uint64_t)(g->nsegs + 1) * 2 * GEN_SEG;
        gen_emit(g, MH_EV_SEGMENT_ALLOC, g->seg_addr[g->nsegs], GEN_SEG, g->site_stack[site], 0,
                 -1, 0, (int64_t)GEN_SEG);
        g->nsegs++;
    }
    uint64_t addr = g->seg_addr[g->cur_seg] + g->top;
    g->stack_addr[g->depth] = addr;
    g->stack_size[g->depth] = size;
    g->stack_seg[g->depth] = g->cur_seg;
    g->depth++;
    g->top += r;
    return gen_emit(g, MH_EV_ALLOC, addr, size, g->site_stack[site], 0, site, (int64_t)r, 0);
}

static int gen_pop(struct gen *g, int site)
{
    g->depth--;
    uint64_t addr = g->stack_addr[g->depth], size = g->stack_size[g->depth];
    g->cur_seg = g->stack_seg[g->depth];
    g->top = addr - g->seg_addr[g->cur_seg];
    int rc = gen_emit(g, MH_EV_FREE_REQUESTED, addr, size, g->site_stack[site], 0, site,
                      -(int64_t)gen_round(size), 0);
    if (rc == 0)
        rc = gen_emit(g, MH_EV_FREE_COMPLETED, addr, size, g->site_stack[site], 0, site, 0, 0);
    return rc;
}

static uint64_t gen_act_size(int layer, int site, uint64_t step)
{
    static const uint64_t base[GEN_SITES] = {48u << 20, 96u << 20, 12u << 20, 24u << 20};
    /* sequence length varies a little from step to step */
    uint64_t jitter = 100 + (step * 37 + (uint64_t)layer * 11) % 21;
    return base[site] * jitter / 100 + 1000;
}

static int gen_step(struct gen *g, uint64_t step)
{
    gen_emit(g, MH_EV_STEP_BEGIN, 0, 0, 0, (uint32_t)step, -1, 0, 0);
    for (int l = 0; l < GEN_LAYERS; l++)
        for (int s = 0; s < GEN_SITES; s++) {
            gen_push(g, gen_act_size(l, s, step), s);
            gen_push(g, 6u << 20, GEN_SITES + 1); /* temporary */
            gen_pop(g, GEN_SITES + 1);
        }
    gen_push(g, 200u << 20, GEN_SITES); /* logits */
    gen_pop(g, GEN_SITES);
    for (int l = GEN_LAYERS - 1; l >= 0; l--)
        for (int s = GEN_SITES - 1; s >= 0; s--) {
            gen_push(g, 32u << 20, GEN_SITES + 2); /* gradient temporary */
            gen_pop(g, GEN_SITES + 2);
            gen_pop(g, s);
        }
    return gen_emit(g, MH_EV_STEP_END, 0, 0, 0, (uint32_t)step, -1, 0, 0);
}

static int gen_params(struct gen *g)
{
    uint64_t seg = 0x7e0000000000ull, size = 3ull << 30;
    gen_emit(g, MH_EV_SEGMENT_ALLOC, seg, size, g->site_stack[GEN_SITES + 3], 0, -1, 0,
             (int64_t)size);
    for (int i = 0; i < GEN_LAYERS * 3; i++) {
        uint64_t s = (24u << 20) + 4096;
        gen_emit(g, MH_EV_ALLOC, seg + g->param_top, s, g->site_stack[GEN_SITES + 3], 0,
                 GEN_SITES + 3, (int64_t)gen_round(s), 0);
        g->param_top += gen_round(s);
    }
    return 0;
}

/* Writes a run of about `events` events to `path`; `export_path` may be NULL. */
static int gen_write(const char *path, const char *export_path, uint64_t events)
{
    struct gen g;
    memset(&g, 0, sizeof g);
    struct mh_writer_opts wo = {.source = "simulated", .chunk_events = 0};
    int rc = mh_writer_open(path, &wo, &g.w);
    if (rc < 0)
        return rc;
    if (export_path && !(g.export_fp = fopen(export_path, "wb"))) {
        mh_writer_close(g.w);
        return MH_EIO;
    }
    mh_writer_set_meta(g.w, "torch_version", "2.5.1 (synthetic)");
    mh_writer_set_device(g.w, 0, "Synthetic GPU 80GB", 80ull << 30);
    static const char *const files[] = {"model/attention.py", "model/mlp.py", "model/norm.py",
                                        "model/attention.py", "model/head.py", "model/ops.py",
                                        "train.py", "model/build.py"};
    static const char *const funcs[] = {"forward", "forward", "forward", "softmax", "forward",
                                        "gelu", "backward_hook", "build_model"};
    static const uint32_t lines[] = {61, 34, 17, 75, 22, 9, 120, 40};
    for (int i = 0; i < GEN_SITES + 4; i++)
        g.site_stack[i] = gen_stack(g.w, files[i], funcs[i], lines[i]);
    gen_params(&g);
    for (uint64_t step = 0; g.events < events && rc == 0; step++)
        rc = gen_step(&g, step);
    if (g.export_fp)
        fclose(g.export_fp);
    int rc2 = mh_writer_close(g.w);
    return rc < 0 ? rc : rc2;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* Wall time in *secs, CPU time of this process in *cpu (the plot runs on
 * one thread, so CPU time is what it costs on an idle core). */
static int plot_file(const char *path, const char *png, double *secs, double *cpu)
{
    struct mh__session *r;
    int rc = mh__session_open(path, &r);
    if (rc < 0)
        return rc;
    struct mh__plot_opts o;
    memset(&o, 0, sizeof o);
    o.name = path;
    struct mh__sink sink;
    mh__sink_init_mem(&sink);
    char err[256];
    double t = now_s(), c = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    rc = mh__plot_render(r, &o, &sink, NULL, err, sizeof err);
    *secs = now_s() - t;
    *cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c;
    mh__session_close(r);
    FILE *fp = png ? fopen(png, "wb") : NULL;
    if (fp) {
        fwrite(sink.buf, 1, sink.len, fp);
        fclose(fp);
    }
    mh__sink_free(&sink);
    return rc;
}

static double run_matplotlib(const char *table, const char *png)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s/tests/bench/plot_matplotlib.py %s %s", MH_SOURCE_DIR,
             table, png);
    double t = now_s();
    int rc = system(cmd);
    double secs = now_s() - t;
    return rc == 0 ? secs : -1;
}

static int one_size(const char *dir, const char *label, uint64_t events, int with_mpl)
{
    char path[512], table[512], png[512], mpl_png[512];
    snprintf(path, sizeof path, "%s/bench_plot_%s.memhist", dir, label);
    snprintf(table, sizeof table, "%s/bench_plot_%s.bin", dir, label);
    snprintf(png, sizeof png, "%s/bench_plot_%s.png", dir, label);
    snprintf(mpl_png, sizeof mpl_png, "%s/bench_plot_%s_matplotlib.png", dir, label);
    int rc = gen_write(path, with_mpl ? table : NULL, events);
    if (rc < 0) {
        fprintf(stderr, "bench_viz_plot: cannot write %s: %s\n", path, mh_strerror(rc));
        return 1;
    }
    double secs, cpu;
    if ((rc = plot_file(path, png, &secs, &cpu)) < 0) {
        fprintf(stderr, "bench_viz_plot: plot failed: %s\n", mh_strerror(rc));
        return 1;
    }
    printf("plot_%s_s: %.3f\nplot_%s_cpu_s: %.3f\n", label, secs, label, cpu);
    if (with_mpl) {
        double m = run_matplotlib(table, mpl_png);
        if (m < 0)
            printf("matplotlib_%s_s: unavailable\n", label);
        else
            printf("matplotlib_%s_s: %.3f\nmatplotlib_over_memhist_%s: %.1f\n", label, m, label,
                   m / secs);
        unlink(table);
    }
    fflush(stdout);
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    const char *write = NULL, *export = NULL;
    uint64_t events = 0;
    int with_mpl = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0 && i + 1 < argc)
            write = argv[++i];
        else if (strcmp(argv[i], "--export") == 0 && i + 1 < argc)
            export = argv[++i];
        else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
            events = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-matplotlib") == 0)
            with_mpl = 0;
        else {
            fprintf(stderr, "usage: %s [--events N] [--write FILE [--export FILE]] "
                            "[--no-matplotlib]\n", argv[0]);
            return 2;
        }
    }
    if (write) {
        int rc = gen_write(write, export, events ? events : 100000);
        if (rc < 0)
            fprintf(stderr, "bench_viz_plot: %s: %s\n", write, mh_strerror(rc));
        return rc < 0;
    }
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (events)
        return one_size(dir, "custom", events, with_mpl);
    return one_size(dir, "1M", 1000000, with_mpl) || one_size(dir, "10M", 10000000, with_mpl);
}
