/* pickle_scan.c - the streaming reader's first pass (pickle_stream.h): walks
 * the opcodes without building anything and counts, per memo index, how
 * often the pickle reads it back, so the second pass keeps a memo entry only
 * until its last read. Anything the second pass would not stream is left to
 * the whole-tree reader; where the reader will stop with an error, the scan
 * stops too and leaves the message to it. */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memhist/error.h"
#include "pickle_stream.h"

#define MEMO_SLACK 65536u /* as pickle_read.c */
#define RELEASE_STEP (8u << 20)

void mh__pickle_release(const unsigned char *base, size_t *done, size_t upto)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t end = upto / page * page;
    if (end > *done) {
        madvise((void *)(base + *done), end - *done, MADV_DONTNEED);
        *done = end;
    }
}

static uint64_t le(const unsigned char *b, size_t n)
{
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        x |= (uint64_t)b[i] << (8 * i);
    return x;
}

/* Bytes of argument after opcode `op` at p (p points past the opcode); -1
 * where the second pass will fail too (truncation, unknown or unsafe
 * opcodes), -2 for the text memo opcodes, whose reads this pass does not
 * count. *memo: 1 = a put of *idx, 2 = a get of *idx. */
static int64_t arg_len(unsigned char op, const unsigned char *p, size_t left, int *memo,
                       uint64_t *idx)
{
    static const unsigned char none[] = {'N', 0x88, 0x89, '}', ']', ')', 0x8f, '(', 's',
                                         'u',  'e',  'a',  0x90, 'd', 'l', 't',  0x91, 0x85,
                                         0x86, 0x87, '0',  '1',  '2', 0x94, 0x98, 0x97};
    size_t prefix = 0;
    *memo = 0;
    if (memchr(none, op, sizeof none))
        return 0;
    switch (op) {
    case 0x80: case 'K': case 'C': case 'U': case 0x8c: case 0x8a:
        prefix = 1;
        break;
    case 'M':
        return 2;
    case 'J': case 'T': case 'X': case 'B': case 0x8b:
        prefix = 4;
        break;
    case 0x95: case 'G':
        return 8;
    case 0x8d: case 0x8e: case 0x96:
        prefix = 8;
        break;
    case 'q': case 'h': case 'r': case 'j':
        prefix = op == 'q' || op == 'h' ? 1 : 4;
        if (left < prefix)
            return -1;
        *memo = op == 'q' || op == 'r' ? 1 : 2;
        *idx = le(p, prefix);
        return (int64_t)prefix;
    case 'I': case 'L': case 'F': case 'S': case 'V': {
        const unsigned char *nl = memchr(p, '\n', left);
        return nl ? nl - p + 1 : -1;
    }
    case 'p': case 'g':
        return -2;
    default:
        return -1;
    }
    if (op == 0x80 || op == 'K' || op == 'J')
        return (int64_t)prefix;
    if (left < prefix)
        return -1;
    uint64_t n = le(p, prefix);
    if (n > left - prefix)
        return -1;
    return (int64_t)(prefix + n);
}

static int count(uint8_t **refs, size_t *cap, uint64_t idx, int put)
{
    if (idx >= *cap) {
        size_t ncap = *cap ? *cap : 4096;
        while (ncap <= idx)
            ncap *= 2;
        uint8_t *p = realloc(*refs, ncap);
        if (!p)
            return MH_ENOMEM;
        memset(p + *cap, 0, ncap - *cap);
        *refs = p;
        *cap = ncap;
    }
    if (!put && (*refs)[idx] < 255)
        (*refs)[idx]++;
    return 0;
}

int mh__pickle_scan(const unsigned char *data, size_t len, int mapped, uint8_t **refs, size_t *n)
{
    size_t off = 0, released = 0, cap = 0;
    uint64_t writes = 0;
    *refs = NULL;
    *n = 0;
    int rc = 0; /* also when the data ends before STOP: the reader says so */
    while (off < len) {
        unsigned char op = data[off++];
        if (op == '.')
            break;
        int memo;
        uint64_t idx = 0;
        int64_t a = arg_len(op, data + off, len - off, &memo, &idx);
        if (a < 0) {
            rc = a == -1 ? 0 : MH__PS_WHOLE; /* -1: the reader stops here, with its message */
            break;
        }
        off += (size_t)a;
        if (op == 0x94) {
            memo = 1;
            idx = writes;
        }
        if (memo == 1 && idx > writes + MEMO_SLACK)
            break;
        if (memo == 1)
            writes++;
        if (memo && (memo == 1 ? idx >= cap : idx < cap) && /* unknown gets fail later */
            count(refs, &cap, idx, memo == 1) < 0) {
            rc = MH_ENOMEM;
            break;
        }
        if (mapped && off - released >= RELEASE_STEP)
            mh__pickle_release(data, &released, off);
    }
    if (mapped)
        mh__pickle_release(data, &released, off);
    if (rc) {
        free(*refs);
        *refs = NULL;
        return rc;
    }
    *n = cap;
    return 0;
}
