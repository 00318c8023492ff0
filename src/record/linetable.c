/* linetable.c - CPython line tables, parsed from copies taken when a code
 * object is first seen (pycode.c), so the drain thread maps instruction
 * offsets to line numbers without the GIL or the live object.
 *
 * Formats: 3.10 co_linetable is a list of (byte delta, signed line delta)
 * pairs, -128 meaning "no line" (Objects/lnotab_notes.txt); 3.11 and later
 * use the location table (Objects/locations.md): each entry starts with a
 * byte with bit 7 set, bits 3-6 the kind and bits 0-2 the length in code
 * units minus one, followed by 6-bit varints. Both walk address ranges
 * exactly as PyCode_Addr2Line does. */
#include "pystack.h"

/* 3.10: advance over zero-length ranges as _PyLineTable_NextAddressRange. */
static int line310(const uint8_t *t, size_t len, int first, int offset)
{
    int line = first, ar_line = -1;
    long start = 0, end = 0;
    size_t i = 0;
    while (end <= offset) {
        if (i + 1 >= len)
            return -1;
        do {
            if (i + 1 >= len)
                return -1;
            start = end;
            end += t[i];
            int d = (int)(int8_t)t[i + 1];
            i += 2;
            if (d == -128) {
                ar_line = -1;
            } else {
                line += d;
                ar_line = line;
            }
        } while (start == end);
    }
    return ar_line;
}

static size_t varint(const uint8_t *t, size_t len, size_t i, unsigned *val)
{
    unsigned v = 0, shift = 0;
    while (i < len) {
        uint8_t b = t[i++];
        v |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 30)
            break;
    }
    *val = v;
    return i;
}

static int line_delta(const uint8_t *t, size_t len, size_t i)
{
    int kind = (t[i] >> 3) & 15;
    if (kind == 13 || kind == 14) { /* no-column, long: signed varint */
        unsigned u;
        varint(t, len, i + 1, &u);
        return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
    }
    if (kind >= 10 && kind <= 12) /* one-line forms */
        return kind - 10;
    return 0; /* short forms and "none" */
}

/* 3.11+: the location table. */
static int line311(const uint8_t *t, size_t len, int first, int offset)
{
    int computed = first, ar_line = -1;
    long end = 0;
    size_t i = 0;
    while (end <= offset) {
        if (i >= len)
            return -1;
        computed += line_delta(t, len, i);
        ar_line = ((t[i] >> 3) & 15) == 15 ? -1 : computed;
        end += 2 * ((t[i] & 7) + 1);
        do
            i++;
        while (i < len && !(t[i] & 128));
    }
    return ar_line;
}

int mh__linetable_line(int minor, const uint8_t *table, size_t len, int first, int offset)
{
    if (offset < 0)
        return first;
    if (!table)
        return -1;
    return minor <= 10 ? line310(table, len, first, offset) : line311(table, len, first, offset);
}
