/* utf8.c - UTF-8 well-formedness and \xNN escaping (see utf8.h). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

size_t mh__utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* beyond U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* Whether the sequence of length len at s is a control character to escape. */
static int is_control(const unsigned char *s, size_t len, unsigned flags)
{
    if (!(flags & MH__UTF8_ESC_CONTROL))
        return 0;
    if (len == 1)
        return s[0] < 0x20 || s[0] == 0x7f;
    return len == 2 && s[0] == 0xc2 && s[1] < 0xa0; /* U+0080..U+009F */
}

int mh__utf8_clean(const char *s, size_t n, unsigned flags)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = mh__utf8_seq(u + i, n - i);
        if (len == 0 || is_control(u + i, len, flags))
            return 0;
        i += len;
    }
    return 1;
}

size_t mh__utf8_escape(const char *s, size_t n, unsigned flags, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t need = 0, used = 0;
    int full = cap == 0;
    for (size_t i = 0; i < n;) {
        size_t len = mh__utf8_seq(u + i, n - i);
        int esc = len == 0 || is_control(u + i, len, flags);
        size_t w = esc ? 4 * (len ? len : 1) : len;
        if (!full && used + w < cap) {
            if (esc) {
                for (size_t k = 0; k < (len ? len : 1); k++) {
                    char e[4] = {'\\', 'x', hex[u[i + k] >> 4], hex[u[i + k] & 15]};
                    memcpy(out + used + 4 * k, e, 4);
                }
            } else {
                memcpy(out + used, u + i, len);
            }
            used += w;
        } else {
            full = 1;
        }
        need += w;
        i += len ? len : 1;
    }
    if (cap)
        out[used] = '\0';
    return need;
}

char *mh__utf8_escape_in_place(char *buf, size_t cap, unsigned flags)
{
    char small[1024];
    size_t n = strlen(buf);
    if (mh__utf8_clean(buf, n, flags))
        return buf;
    char *raw = n < sizeof small ? small : malloc(n + 1);
    if (!raw) { /* keep what fits in the small copy */
        raw = small;
        n = sizeof small - 1;
    }
    memcpy(raw, buf, n);
    mh__utf8_escape(raw, n, flags, buf, cap);
    if (raw != small)
        free(raw);
    return buf;
}
