/* writer.c - the .memhist writer: output sink (fd or memory), chunk framing
 * with CRC-32C, the header and trailer chunks, metadata and devices.
 *
 * Sits at the end of the recording data flow (the recorder's drain thread or
 * an offline producer hands it events). Owns the staged output bytes, the open
 * events chunk and the interning tables (writer_intern.c). Never seeks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memhist/error.h"
#include "memhist/version.h"
#include "memhist/writer.h"
#include "writer_int.h"

#define STAGE_LIMIT (1u << 20)

int mh__w_fail(struct mh_writer *w, int code, int errnum)
{
    if (!w->err) {
        w->err = code;
        w->err_errno = errnum;
    }
    return w->err;
}

int mh__writer_errno(const struct mh_writer *w)
{
    return w ? w->err_errno : 0;
}

uint64_t mh__writer_events_out(const struct mh_writer *w)
{
    return w ? w->events_out : 0;
}

static int sink_write(struct mh_writer *w)
{
    if (w->is_mem || w->err) {
        if (!w->err)
            w->events_out = w->events_staged;
        return w->err;
    }
    size_t done = 0;
    while (done < w->out.size) {
        ssize_t n = write(w->fd, w->out.data + done, w->out.size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return mh__w_fail(w, MH_EIO, n < 0 ? errno : EIO);
        done += (size_t)n;
    }
    w->bytes += done;
    w->out.size = 0;
    w->events_out = w->events_staged;
    return 0;
}

size_t mh__w_begin(struct mh_writer *w)
{
    static const char zero[MH__FRAME_LEN];
    size_t start = w->out.size;
    msgpack_sbuffer_write(&w->out, zero, MH__FRAME_LEN);
    return start;
}

int mh__w_end(struct mh_writer *w, size_t start, uint8_t type)
{
    if (!w->out.data || w->out.size < start + MH__FRAME_LEN)
        return mh__w_fail(w, MH_ENOMEM, ENOMEM);
    uint8_t *f = (uint8_t *)w->out.data + start;
    size_t len = w->out.size - start - MH__FRAME_LEN;
    if (len > MH__MAX_CHUNK_BYTES)
        return mh__w_fail(w, MH_ELIMIT, 0);
    f[0] = type;
    mh__put_u32(f + 1, (uint32_t)len);
    uint32_t crc = mh__crc32c(0, f, 5);
    crc = mh__crc32c(crc, f + MH__FRAME_LEN, len);
    mh__put_u32(f + 5, crc);
    if (type != MH__CH_TRAILER) {
        w->chunks++;
        w->chain = mh__crc32c(w->chain, f + 5, 4);
    }
    if (w->out.size >= STAGE_LIMIT)
        return sink_write(w);
    return w->err;
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_kv_str(msgpack_packer *pk, const char *k, const char *v)
{
    pack_str(pk, k);
    pack_str(pk, v);
}

static void pack_kv_u64(msgpack_packer *pk, const char *k, uint64_t v)
{
    pack_str(pk, k);
    msgpack_pack_uint64(pk, v);
}

static int write_header(struct mh_writer *w, const char *source)
{
    uint8_t pre[MH__PREAMBLE_LEN];
    memcpy(pre, MH__MAGIC, MH__MAGIC_LEN);
    mh__put_u32(pre + MH__MAGIC_LEN, MH_FORMAT_VERSION);
    msgpack_sbuffer_write(&w->out, (const char *)pre, sizeof pre);

    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = 0;
    host[sizeof host - 1] = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    size_t start = mh__w_begin(w);
    msgpack_pack_map(&w->pk, 6);
    pack_kv_u64(&w->pk, "format", MH_FORMAT_VERSION);
    pack_kv_str(&w->pk, "source", source);
    pack_kv_str(&w->pk, "library", MH_VERSION_STRING);
    pack_kv_str(&w->pk, "host", host);
    pack_kv_u64(&w->pk, "pid", (uint64_t)getpid());
    pack_kv_u64(&w->pk, "start_ns", (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    return mh__w_end(w, start, MH__CH_HEADER);
}

static const char *pick_source(const struct mh_writer_opts *o)
{
    if (!o || !o->source)
        return "recorded";
    if (!strcmp(o->source, "recorded") || !strcmp(o->source, "simulated") ||
        !strcmp(o->source, "imported"))
        return o->source;
    return NULL;
}

static int writer_new(const struct mh_writer_opts *opts, int fd, int own, int mem,
                      struct mh_writer **out)
{
    const char *source = pick_source(opts);
    if (!out || !source)
        return MH_EINVAL;
    struct mh_writer *w = calloc(1, sizeof *w);
    if (!w)
        return MH_ENOMEM;
    w->fd = fd;
    w->own_fd = own;
    w->is_mem = mem;
    w->chunk_events = opts && opts->chunk_events ? opts->chunk_events : 4096;
    if (w->chunk_events > MH__MAX_CHUNK_EVENTS)
        w->chunk_events = MH__MAX_CHUNK_EVENTS;
    msgpack_sbuffer_init(&w->out);
    msgpack_packer_init(&w->pk, &w->out, msgpack_sbuffer_write);
    w->evs = malloc(sizeof *w->evs * w->chunk_events);
    w->colv = malloc(sizeof *w->colv * w->chunk_events);
    w->coln = malloc(w->chunk_events);
    w->colv2 = malloc(sizeof *w->colv2 * w->chunk_events);
    w->coln2 = malloc(w->chunk_events);
    w->ring_addr = calloc(MH__RING_SIZE, sizeof *w->ring_addr);
    w->ring_size = calloc(MH__RING_SIZE, sizeof *w->ring_size);
    w->amap = calloc(2 * MH__RING_SIZE, sizeof *w->amap);
    if (!w->evs || !w->colv || !w->coln || !w->colv2 || !w->coln2 || !w->ring_addr ||
        !w->ring_size || !w->amap || write_header(w, source) != 0) {
        w->own_fd = 0;
        w->closed = 1;
        if (mem)
            mh_writer_free_mem(w);
        else
            mh_writer_close(w);
        return MH_ENOMEM;
    }
    *out = w;
    return 0;
}

int mh_writer_open(const char *path, const struct mh_writer_opts *opts, struct mh_writer **out)
{
    if (!path || !out)
        return MH_EINVAL;
    if (!strcmp(path, "-"))
        return writer_new(opts, STDOUT_FILENO, 0, 0, out);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return MH_EIO; /* errno says why */
    int rc = writer_new(opts, fd, 1, 0, out);
    if (rc)
        close(fd);
    return rc;
}

int mh_writer_open_fd(int fd, const struct mh_writer_opts *opts, struct mh_writer **out)
{
    if (fd < 0)
        return MH_EINVAL;
    return writer_new(opts, fd, 0, 0, out);
}

int mh_writer_open_mem(const struct mh_writer_opts *opts, struct mh_writer **out)
{
    return writer_new(opts, -1, 0, 1, out);
}

int mh_writer_mem(const struct mh_writer *w, const void **data, size_t *len)
{
    if (!w || !w->is_mem || !data || !len)
        return MH_EINVAL;
    *data = w->out.data;
    *len = w->out.size;
    return 0;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Drops an earlier value of `key`, so setting a key again never counts
 * against the limit; a value already written is superseded by the new one,
 * which is written with the next flush. */
static void forget_meta(struct mh_writer *w, const char *key)
{
    uint32_t i = 0;
    while (i < w->nmeta && strcmp(w->meta[i].key, key))
        i++;
    if (i == w->nmeta)
        return;
    free(w->meta[i].key);
    free(w->meta[i].value);
    memmove(&w->meta[i], &w->meta[i + 1], sizeof *w->meta * (w->nmeta - i - 1));
    w->nmeta--;
    if (i < w->meta_written)
        w->meta_written--;
}

int mh_writer_set_meta(struct mh_writer *w, const char *key, const char *value)
{
    if (!w || !key || !value || w->closed)
        return MH_EINVAL;
    if (strlen(key) > MH__MAX_STRING_BYTES || strlen(value) > MH__MAX_STRING_BYTES)
        return MH_ELIMIT;
    forget_meta(w, key);
    if (w->nmeta == MH__MAX_META)
        return MH_ELIMIT;
    if (w->nmeta == w->meta_cap) {
        uint32_t cap = w->meta_cap ? w->meta_cap * 2 : 16;
        void *p = realloc(w->meta, sizeof *w->meta * cap);
        if (!p)
            return MH_ENOMEM;
        w->meta = p;
        w->meta_cap = cap;
    }
    struct mh__kv kv = {dup_str(key), dup_str(value)};
    if (!kv.key || !kv.value) {
        free(kv.key);
        free(kv.value);
        return MH_ENOMEM;
    }
    w->meta[w->nmeta++] = kv;
    return 0;
}

int mh_writer_set_device(struct mh_writer *w, int device, const char *name, uint64_t total_bytes)
{
    if (!w || w->closed || device < -1 || device > INT16_MAX)
        return MH_EINVAL;
    if (w->ndevs == MH__MAX_DEVICES)
        return MH_ELIMIT;
    if (w->ndevs == w->devs_cap) {
        uint32_t cap = w->devs_cap ? w->devs_cap * 2 : 8;
        void *p = realloc(w->devs, sizeof *w->devs * cap);
        if (!p)
            return MH_ENOMEM;
        w->devs = p;
        w->devs_cap = cap;
    }
    struct mh__dev d = {device, dup_str(name ? name : ""), total_bytes};
    if (!d.name)
        return MH_ENOMEM;
    w->devs[w->ndevs++] = d;
    return 0;
}

/* Metadata and devices are written as they were set; a reader keeps the
 * last value per key and per device. */
static int write_meta_devs(struct mh_writer *w)
{
    if (w->meta_written < w->nmeta) {
        size_t start = mh__w_begin(w);
        msgpack_pack_map(&w->pk, w->nmeta - w->meta_written);
        for (; w->meta_written < w->nmeta; w->meta_written++)
            pack_kv_str(&w->pk, w->meta[w->meta_written].key, w->meta[w->meta_written].value);
        mh__w_end(w, start, MH__CH_META);
    }
    if (w->devs_written < w->ndevs) {
        size_t start = mh__w_begin(w);
        msgpack_pack_array(&w->pk, w->ndevs - w->devs_written);
        for (; w->devs_written < w->ndevs; w->devs_written++) {
            const struct mh__dev *d = &w->devs[w->devs_written];
            msgpack_pack_array(&w->pk, 3);
            msgpack_pack_int64(&w->pk, d->device);
            pack_str(&w->pk, d->name);
            msgpack_pack_uint64(&w->pk, d->total);
        }
        mh__w_end(w, start, MH__CH_DEVICES);
    }
    return w->err;
}

static int seal(struct mh_writer *w)
{
    mh__w_write_defs(w);
    write_meta_devs(w);
    if (w->nev) {
        w->events_staged += w->nev;
        mh__w_write_events(w);
    }
    mh__w_write_dropped(w);
    return w->err;
}

static int ids_known(const struct mh_writer *w, const struct mh_event *ev)
{
    return ev->stack <= w->stacks.count && ev->str <= w->strings.count &&
           ev->str2 <= w->strings.count;
}

/* Stages one event whose ids are known; seals the chunk when it is full. */
static int stage(struct mh_writer *w, const struct mh_event *ev)
{
    w->evs[w->nev++] = *ev;
    w->by_kind[ev->kind]++;
    w->events++;
    return w->nev == w->chunk_events ? seal(w) : 0;
}

int mh_writer_event(struct mh_writer *w, const struct mh_event *ev)
{
    if (!w || !ev || w->closed)
        return MH_EINVAL;
    if (w->err)
        return w->err;
    if (!ids_known(w, ev))
        return MH_EINVAL;
    return stage(w, ev);
}

int mh_writer_events(struct mh_writer *w, const struct mh_event *evs, size_t n, size_t *refused)
{
    size_t bad = 0;
    if (refused)
        *refused = 0;
    if (!w || (!evs && n) || w->closed)
        return MH_EINVAL;
    for (size_t i = 0; i < n && !w->err; i++) {
        if (ids_known(w, &evs[i]))
            stage(w, &evs[i]);
        else {
            mh_writer_add_thread_dropped(w, evs[i].thread, 1);
            bad++;
        }
    }
    if (refused)
        *refused = bad;
    return w->err;
}

int mh_writer_flush(struct mh_writer *w)
{
    if (!w || w->closed)
        return MH_EINVAL;
    if (seal(w))
        return w->err;
    return sink_write(w);
}

uint64_t mh_writer_bytes(const struct mh_writer *w)
{
    if (!w)
        return 0;
    return w->is_mem ? w->out.size : w->bytes;
}

static int write_trailer(struct mh_writer *w)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    size_t start = mh__w_begin(w);
    msgpack_pack_map(&w->pk, 6);
    pack_kv_u64(&w->pk, "events", w->events);
    pack_kv_u64(&w->pk, "chunks", w->chunks);
    pack_kv_u64(&w->pk, "chain", w->chain);
    pack_kv_u64(&w->pk, "dropped", w->dropped);
    pack_kv_u64(&w->pk, "end_ns", (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    pack_str(&w->pk, "by_kind");
    unsigned nk = 0;
    for (unsigned k = 0; k < 256; k++)
        if (w->by_kind[k])
            nk = k + 1;
    msgpack_pack_array(&w->pk, nk);
    for (unsigned k = 0; k < nk; k++)
        msgpack_pack_uint64(&w->pk, w->by_kind[k]);
    return mh__w_end(w, start, MH__CH_TRAILER);
}

int mh_writer_close(struct mh_writer *w)
{
    if (!w)
        return 0;
    int rc = 0;
    if (!w->closed && w->out.data) {
        seal(w);
        write_trailer(w);
        sink_write(w);
        rc = w->err;
    }
    w->closed = 1;
    if (w->own_fd && close(w->fd) != 0 && !rc)
        rc = mh__w_fail(w, MH_EIO, errno);
    int errnum = w->err_errno;
    w->own_fd = 0;
    free(w->evs);
    free(w->colv);
    free(w->coln);
    free(w->colv2);
    free(w->coln2);
    w->colv2 = NULL;
    w->coln2 = NULL;
    free(w->ring_addr);
    free(w->ring_size);
    free(w->amap);
    w->evs = NULL;
    w->colv = NULL;
    w->coln = NULL;
    w->ring_addr = w->ring_size = NULL;
    w->amap = NULL;
    mh__w_intern_free(w);
    mh__w_dropped_free(w);
    for (uint32_t i = 0; i < w->nmeta; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    for (uint32_t i = 0; i < w->ndevs; i++)
        free(w->devs[i].name);
    free(w->meta);
    free(w->devs);
    w->meta = NULL;
    w->devs = NULL;
    w->nmeta = w->ndevs = 0;
    if (!w->is_mem) {
        msgpack_sbuffer_destroy(&w->out);
        free(w);
    }
    if (rc == MH_EIO && errnum)
        errno = errnum;
    return rc;
}

void mh_writer_free_mem(struct mh_writer *w)
{
    if (!w || !w->is_mem)
        return;
    if (!w->closed)
        mh_writer_close(w);
    msgpack_sbuffer_destroy(&w->out);
    free(w);
}
