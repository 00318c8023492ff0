/* fuzz_cli_fit.c - libFuzzer target for the parsers of `memhist fit`'s
 * input (src/cli/fit_command.c): the range of --vary (LO..HI), --headroom
 * (a size or a percentage), and the command's words with their {NAME}
 * placeholders and leading VAR=VALUE assignments, found, replaced and
 * quoted back as text. The input is split at NUL bytes into words; the
 * first is also the range and the headroom.
 * seeds: fit */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#define MAX_WORDS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *words[MAX_WORDS + 1];
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    int n = 0;
    for (size_t i = 0; i <= size && n < MAX_WORDS;) {
        words[n++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    words[n] = NULL;
    int64_t lo, hi;
    uint64_t headroom;
    if (mh__fit_parse_range(words[0], &lo, &hi) == 0 && (lo < 0 || hi < 0 || hi > INT32_MAX))
        abort();
    mh__fit_parse_headroom(words[0], (uint64_t)size << 20, &headroom);
    char name[64], text[512];
    struct mh__fit_command c = {words, mh__fit_command_env_count(words), "batch"};
    if (mh__fit_command_first_name(words, name, sizeof name) == 0)
        c.name = name;
    if (mh__fit_command_uses(&c)) {
        char **w = mh__fit_command_expand(&c, (int64_t)size * 1000003);
        for (int i = 0; w && i < n; i++)
            if (strchr(w[i], '{') && !strchr(words[i], '{'))
                abort(); /* a placeholder made from nothing */
        free(w);
    }
    mh__fit_command_text(words, text, sizeof text);
    if (strlen(text) >= sizeof text)
        abort();
    free(buf);
    return 0;
}
