/* reader.c - the .memhist reader: input (file, stdin or memory), chunk
 * framing and checksums, damage reporting, event iteration and the summary.
 *
 * First stage of the offline data flow: the model pulls events from here.
 * Owns the chunk buffer, the decoded events of the current chunk and (through
 * reader_defs.c) every definition seen. Input is never trusted: each length is
 * bounded by the bytes left and by the limits in fmt.h, and each chunk's
 * CRC-32C is checked before any of its bytes are interpreted. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memhist/error.h"
#include "memhist/version.h"
#include "reader_int.h"

int mh__r_fail(struct mh_reader *r, int code, uint64_t off, const char *fmt, ...)
{
    if (r->err)
        return r->err;
    r->err = code;
    int n = snprintf(r->errmsg, sizeof r->errmsg, "byte offset %llu: ", (unsigned long long)off);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof r->errmsg)
        vsnprintf(r->errmsg + n, sizeof r->errmsg - (size_t)n, fmt, ap);
    va_end(ap);
    r->sum.damaged = 1;
    r->sum.damage_offset = off;
    return code;
}

/* Reads exactly `n` bytes at the current position; returns the number read
 * (less at the end of input, or after a failure that sets the error: out of
 * memory, a read error). *out points at them until the next read. */
static size_t input(struct mh_reader *r, size_t n, const uint8_t **out)
{
    if (r->mem) {
        size_t left = r->off < r->mem_len ? r->mem_len - (size_t)r->off : 0;
        *out = r->mem + r->off;
        return n < left ? n : left;
    }
    if (n > r->buf_cap) {
        size_t cap = r->buf_cap ? r->buf_cap : 65536;
        while (cap < n)
            cap *= 2;
        uint8_t *b = realloc(r->buf, cap);
        if (!b) {
            mh__r_fail(r, MH_ENOMEM, r->off, "out of memory for a chunk of %zu bytes", n);
            return 0;
        }
        r->buf = b;
        r->buf_cap = cap;
    }
    *out = r->buf;
    size_t got = fread(r->buf, 1, n, r->f);
    if (got < n && ferror(r->f))
        mh__r_fail(r, MH_EIO, r->off + got, "read error: %s", strerror(errno));
    return got;
}

/* Next chunk: 1 = chunk, 0 = end of input exactly at a chunk boundary,
 * < 0 = damage (error set). */
static int next_chunk(struct mh_reader *r, uint8_t *type, const uint8_t **payload, size_t *len)
{
    const uint8_t *fr;
    uint8_t frame[MH__FRAME_LEN];
    size_t got = input(r, MH__FRAME_LEN, &fr);
    if (r->err)
        return r->err;
    if (got == 0)
        return 0;
    if (got < MH__FRAME_LEN)
        return mh__r_fail(r, MH_ETRUNCATED, r->off, "chunk frame cut short (%zu of %d bytes)", got,
                          MH__FRAME_LEN);
    memcpy(frame, fr, sizeof frame);
    uint32_t n = mh__get_u32(frame + 1);
    if (n > MH__MAX_CHUNK_BYTES)
        return mh__r_fail(r, MH_EFORMAT, r->off, "chunk length %u exceeds the limit", n);
    r->off += MH__FRAME_LEN;
    got = input(r, n, payload);
    if (r->err)
        return r->err;
    if (got < n)
        return mh__r_fail(r, MH_ETRUNCATED, r->off - MH__FRAME_LEN,
                          "chunk of type %u cut short (%zu of %u payload bytes)", frame[0], got, n);
    uint32_t crc = mh__crc32c(mh__crc32c(0, frame, 5), *payload, n);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    crc = mh__get_u32(frame + 5); /* let the fuzzer reach the decoders */
#endif
    if (crc != mh__get_u32(frame + 5))
        return mh__r_fail(r, MH_EFORMAT, r->off - MH__FRAME_LEN,
                          "checksum mismatch in chunk of type %u (%u bytes)", frame[0], n);
    *type = frame[0];
    *len = n;
    if (frame[0] != MH__CH_TRAILER) {
        r->chunks++;
        r->chain = mh__crc32c(r->chain, frame + 5, 4);
    }
    r->off += n;
    r->consumed += n + MH__FRAME_LEN;
    return 1;
}

/* Reads chunks until one yields events, the trailer or an error. */
static int advance(struct mh_reader *r)
{
    while (!r->err && !r->done) {
        uint8_t type = 0;
        const uint8_t *p = NULL;
        size_t len = 0;
        uint64_t at = r->off;
        int rc = next_chunk(r, &type, &p, &len);
        if (rc == 0)
            return mh__r_fail(r, MH_ETRUNCATED, at, "file ends without a trailer");
        if (rc < 0)
            return rc;
        if (type == MH__CH_EVENTS) {
            rc = mh__r_events(r, p, len, at);
            if (rc == 0)
                r->events_decoded += r->nev;
            if (rc == 0 && r->nev)
                return 0;
        } else if (type == MH__CH_DROPPED) {
            rc = mh__r_dropped(r, p, len, at);
        } else if (type == MH__CH_TRAILER) {
            rc = mh__r_trailer(r, p, len, at);
            r->done = rc == 0;
        } else if (type >= MH__CH_STRINGS && type <= MH__CH_DEVICES) {
            rc = mh__r_defs(r, type, p, len, at);
        } else if (type == MH__CH_HEADER) {
            rc = mh__r_fail(r, MH_EFORMAT, at, "second header chunk");
        }
        if (rc < 0)
            return rc;
    }
    return r->err;
}

int mh_reader_next(struct mh_reader *r, struct mh_event *ev)
{
    if (!r || !ev)
        return MH_EINVAL;
    if (r->iev == r->nev) {
        r->iev = r->nev = 0;
        int rc = advance(r);
        if (rc < 0)
            return rc;
        if (r->nev == 0)
            return 0;
    }
    *ev = r->evs[r->iev++];
    struct mh_file_summary *s = &r->sum;
    if (ev->kind < MH_EV_KIND_COUNT)
        s->events_by_kind[ev->kind]++;
    if (s->events++ == 0 || ev->time_ns < s->first_time_ns)
        s->first_time_ns = ev->time_ns;
    if (ev->time_ns > s->last_time_ns)
        s->last_time_ns = ev->time_ns;
    return 1;
}

static int read_preamble(struct mh_reader *r)
{
    const uint8_t *p;
    size_t got = input(r, MH__PREAMBLE_LEN, &p);
    if (r->err)
        return r->err;
    if (got < MH__MAGIC_LEN || memcmp(p, MH__MAGIC, MH__MAGIC_LEN) != 0)
        return got < MH__MAGIC_LEN && memcmp(p, MH__MAGIC, got) == 0
                   ? mh__r_fail(r, MH_ETRUNCATED, 0, "file ends inside the magic")
                   : mh__r_fail(r, MH_EFORMAT, 0, "not a .memhist file (bad magic)");
    if (got < MH__PREAMBLE_LEN)
        return mh__r_fail(r, MH_ETRUNCATED, got, "file ends inside the preamble");
    uint32_t v = mh__get_u32(p + MH__MAGIC_LEN);
    if (v == 0 || v > MH_FORMAT_VERSION)
        return mh__r_fail(r, MH_EVERSION, MH__MAGIC_LEN, "format version %u not supported (1..%d)",
                          v, MH_FORMAT_VERSION);
    r->sum.format_version = v;
    r->off = MH__PREAMBLE_LEN;
    uint8_t type = 0;
    size_t len = 0;
    int rc = next_chunk(r, &type, &p, &len);
    if (rc == 0)
        return mh__r_fail(r, MH_ETRUNCATED, r->off, "file ends before the header chunk");
    if (rc < 0)
        return rc;
    if (type != MH__CH_HEADER)
        return mh__r_fail(r, MH_EFORMAT, MH__PREAMBLE_LEN, "first chunk is not a header");
    rc = mh__r_header(r, p, len, MH__PREAMBLE_LEN);
    r->data_off = r->off;
    r->chain0 = r->chain;
    return rc;
}

static int reader_new(struct mh_reader **out)
{
    struct mh_reader *r = calloc(1, sizeof *r);
    if (!r)
        return MH_ENOMEM;
    r->evs_cap = MH__MAX_CHUNK_EVENTS;
    r->evs = malloc(sizeof *r->evs * r->evs_cap);
    r->cv = malloc(sizeof *r->cv * r->evs_cap);
    r->cv2 = malloc(sizeof *r->cv2 * r->evs_cap);
    r->cn = malloc(r->evs_cap);
    r->cn2 = malloc(r->evs_cap);
    r->ring_addr = calloc(MH__RING_SIZE, sizeof *r->ring_addr);
    r->ring_size = calloc(MH__RING_SIZE, sizeof *r->ring_size);
    *out = r;
    if (!r->evs || !r->cv || !r->cv2 || !r->cn || !r->cn2 || !r->ring_addr || !r->ring_size)
        return MH_ENOMEM;
    return 0;
}

/* Thread-local detail of the last failed open, for mh_reader_open_detail. */
static _Thread_local char open_detail[256];

static int finish_open(struct mh_reader *r, struct mh_reader **out)
{
    int rc = read_preamble(r);
    if (rc < 0) {
        snprintf(open_detail, sizeof open_detail, "%s", mh_reader_errmsg(r));
        mh_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int mh_reader_open_mem(const void *data, size_t len, struct mh_reader **out)
{
    if ((!data && len) || !out)
        return MH_EINVAL;
    struct mh_reader *r;
    int rc = reader_new(&r);
    if (rc) {
        mh_reader_close(r);
        return rc;
    }
    r->mem = data ? data : (const uint8_t *)"";
    r->mem_len = len;
    r->size = len;
    return finish_open(r, out);
}

int mh_reader_open(const char *path, struct mh_reader **out)
{
    if (!path || !out)
        return MH_EINVAL;
    struct mh_reader *r;
    int rc = reader_new(&r);
    if (rc) {
        mh_reader_close(r);
        return rc;
    }
    if (!strcmp(path, "-")) {
        r->f = stdin; /* a redirected file can be rewound */
        struct stat st;
        r->seekable = fstat(fileno(stdin), &st) == 0 && S_ISREG(st.st_mode) && ftello(stdin) == 0;
        r->size = r->seekable ? (uint64_t)st.st_size : 0;
    } else {
        r->f = fopen(path, "rb");
        if (!r->f) {
            int err = errno;
            snprintf(open_detail, sizeof open_detail, "cannot open: %s", strerror(err));
            mh_reader_close(r);
            return err == ENOENT ? MH_ENOTFOUND : MH_EIO;
        }
        r->own_f = 1;
        struct stat st;
        int known = fstat(fileno(r->f), &st) == 0;
        if (known && S_ISDIR(st.st_mode)) {
            snprintf(open_detail, sizeof open_detail, "is a directory, not a .memhist file");
            mh_reader_close(r);
            return MH_EINVAL;
        }
        r->seekable = known && S_ISREG(st.st_mode);
        r->size = r->seekable ? (uint64_t)st.st_size : 0;
    }
    return finish_open(r, out);
}

int mh_reader_open_detail(const char *path, struct mh_reader **out, char *err, size_t errlen)
{
    open_detail[0] = '\0';
    int rc = mh_reader_open(path, out);
    if (rc < 0 && err && errlen)
        snprintf(err, errlen, "%s", open_detail[0] ? open_detail : mh_strerror(rc));
    return rc;
}

int mh_reader_rewind(struct mh_reader *r)
{
    if (!r)
        return MH_EINVAL;
    if (!r->mem && (!r->seekable || fseeko(r->f, (off_t)r->data_off, SEEK_SET) != 0))
        return MH_EUNSUPPORTED;
    r->off = r->data_off;
    r->err = r->done = 0;
    r->errmsg[0] = 0;
    r->nev = r->iev = 0;
    r->ring_pos = r->prev_addr = 0;
    r->chunks = 1;
    r->chain = r->chain0;
    r->events_decoded = r->drop_total = 0;
    r->has_drop = 0;
    memset(r->ring_addr, 0, sizeof *r->ring_addr * MH__RING_SIZE);
    memset(r->ring_size, 0, sizeof *r->ring_size * MH__RING_SIZE);
    uint32_t version = r->sum.format_version;
    memset(&r->sum, 0, sizeof r->sum);
    r->sum.format_version = version;
    return 0;
}

void mh_reader_position(const struct mh_reader *r, uint64_t *offset, uint64_t *size)
{
    *offset = r ? r->off : 0;
    *size = r ? r->size : 0;
}

const char *mh_reader_errmsg(const struct mh_reader *r)
{
    return r ? r->errmsg : "";
}

void mh_reader_summary(const struct mh_reader *r, struct mh_file_summary *out)
{
    if (!out)
        return;
    if (!r) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = r->sum;
}

void mh_reader_close(struct mh_reader *r)
{
    if (!r)
        return;
    if (r->own_f)
        fclose(r->f);
    free(r->buf);
    free(r->evs);
    free(r->cv);
    free(r->cv2);
    free(r->cn);
    free(r->cn2);
    free(r->ring_addr);
    free(r->ring_size);
    mh__r_defs_free(r);
    free(r);
}
