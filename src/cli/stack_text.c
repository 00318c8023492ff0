/* stack_text.c - a recorded stack as lines of text for the printers (see
 * cli.h, mh__cli_stack_text). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "stacks.h"

/* Index of the innermost framework Python frame (torch/optim/adam.py) when
 * the next frame out that is not the framework's is the program's own (its
 * `opt.step()`): the program's line alone would print the same for Adam's
 * two moment buffers. A library's frame (a transformers model) names the
 * allocation well enough. -1 if there is none. */
static int allocating_framework_frame(const struct mh_reader *r, const uint32_t *frames,
                                      size_t n)
{
    int found = -1;
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        if (mh_reader_frame(r, frames[i], &f) != 0)
            continue;
        if (!mh__frame_is_internal(f.file, f.func))
            return mh__frame_is_program(f.file, f.func) ? found : -1;
        size_t len = strlen(f.file);
        if (found < 0 && len > 3 && strcmp(f.file + len - 3, ".py") == 0)
            found = (int)i;
    }
    return -1;
}

/* Whether the stack has a frame of user code (not framework internals). */
static int has_user_frame(const struct mh_reader *r, const uint32_t *frames, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        if (mh_reader_frame(r, frames[i], &f) == 0 && !mh__frame_is_internal(f.file, f.func))
            return 1;
    }
    return 0;
}

const char *mh__cli_stack_text(const struct mh_reader *r, uint32_t stack, const char *sep,
                               size_t max_frames, char *buf, size_t len)
{
    const uint32_t *frames;
    size_t n, used = 0, shown = 0, hidden = 0;
    buf[0] = '\0';
    if (stack == 0 || mh_reader_stack(r, stack, &frames, &n) != 0)
        return buf;
    int skip_internal = has_user_frame(r, frames, n);
    /* framework frames only: from the innermost operation (mh__stack_best_index) */
    int best = skip_internal ? 0 : mh__stack_best_index(r, stack);
    int program_shown = 0;
    hidden = best > 0 ? (size_t)best : 0;
    int allocating = skip_internal ? allocating_framework_frame(r, frames, n) : -1;
    for (size_t i = hidden; i < n && used + 1 < len; i++) {
        struct mh_frame f;
        int known = mh_reader_frame(r, frames[i], &f) == 0;
        int internal = !known || mh__frame_is_internal(f.file, f.func);
        /* past the limit, the program's innermost frame still shows when
         * library frames (a transformers model) filled the lines */
        int program = known && mh__frame_is_program(f.file, f.func);
        if ((skip_internal && internal && (int)i != allocating) || (shown >= max_frames && (program_shown || !program))) {
            hidden++;
            continue;
        }
        program_shown |= program;
        char frame[512];
        if ((int)i == allocating)
            snprintf(frame, sizeof frame, "%s:%u %s", mh__short_path(f.file), f.line, f.func);
        else
            mh__frame_text(r, frames[i], frame, sizeof frame);
        int w = snprintf(buf + used, len - used, "%s%s", shown ? sep : "", frame);
        if (w < 0)
            break;
        used += (size_t)w;
        shown++;
    }
    if (hidden && used + 1 < len)
        snprintf(buf + used, len - used, "%s(+%zu more frame%s)", sep, hidden,
                 hidden == 1 ? "" : "s");
    return buf;
}
