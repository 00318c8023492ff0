/* crc32c.c - CRC-32C (Castagnoli), used to detect damaged chunks in
 * .memhist files: the SSE 4.2 crc32 instruction where the CPU has it (eight
 * bytes per instruction), else slicing-by-8 over tables built once. Both give
 * the same values (the instruction computes this very polynomial, reflected,
 * without the inversions done here around it). */
#include <pthread.h>
#include <string.h>

#include "fmt.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define MH__CRC_HW 1
#endif

static uint32_t crc_tab[8][256];
static int use_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
#ifdef MH__CRC_HW
    use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* `crc` is the running value, inverted. */
static uint32_t crc_tables(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
              crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xff] ^
              crc_tab[2][(hi >> 8) & 0xff] ^ crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
    return crc;
}

#ifdef MH__CRC_HW
__attribute__((target("sse4.2"))) static uint32_t crc_instruction(uint32_t crc, const uint8_t *p,
                                                                  size_t len)
{
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, sizeof word); /* little-endian: the bytes in order */
        c = _mm_crc32_u64(c, word);
    }
    crc = (uint32_t)c;
    while (len--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

uint32_t mh__crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
#ifdef MH__CRC_HW
    if (use_hw)
        return ~crc_instruction(~crc, data, len);
#endif
    return ~crc_tables(~crc, data, len);
}

uint32_t mh__crc32c_tables(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc_tables(~crc, data, len);
}
