/* test_format_crc32c.c - the chunk checksum: CRC-32C's published check
 * value, continuation across pieces, and the same values from the CPU's
 * crc32 instruction (where used) and from the tables, at every length and
 * alignment around the eight-byte steps. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "fmt.h"

Test(format_crc32c, check_value_of_both_paths)
{
    const char *s = "123456789";
    cr_assert_eq(mh__crc32c(0, s, 9), 0xE3069283u);
    cr_assert_eq(mh__crc32c_tables(0, s, 9), 0xE3069283u);
    cr_assert_eq(mh__crc32c(0, s, 0), 0u);
    uint8_t zeros[32] = {0};
    cr_assert_eq(mh__crc32c(0, zeros, 32), 0x8A9136AAu); /* RFC 3720, 32 bytes of zeros */
}

Test(format_crc32c, pieces_continue_the_whole)
{
    uint8_t buf[200];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    uint32_t whole = mh__crc32c(0, buf, sizeof buf);
    for (size_t cut = 0; cut <= sizeof buf; cut += 13)
        cr_assert_eq(mh__crc32c(mh__crc32c(0, buf, cut), buf + cut, sizeof buf - cut), whole,
                     "cut at %zu", cut);
}

Test(format_crc32c, instruction_and_tables_agree)
{
    uint8_t buf[300];
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; off + len <= sizeof buf; len++)
            cr_assert_eq(mh__crc32c(0x1234u, buf + off, len),
                         mh__crc32c_tables(0x1234u, buf + off, len), "offset %zu, length %zu", off,
                         len);
}
