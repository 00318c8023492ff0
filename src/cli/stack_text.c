/* stack_text.c - a recorded stack as lines of text for the printers (see
 * cli.h, mh__cli_stack_text). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "stacks.h"

/* Whether a frame's file is Python source. */
static int python_file(const char *file)
{
    size_t len = file ? strlen(file) : 0;
    return len > 3 && strcmp(file + len - 3, ".py") == 0;
}

/* Index of the frame that allocated, inside the stack's innermost frame
 * that is not the framework's (-1 if there is none): the innermost
 * framework Python frame (torch/optim/adam.py), else with `any_owner` the
 * innermost ATen operation of C++ frames. Without `any_owner` it is shown
 * only when that outer frame is the program's own (its `opt.step()`, the
 * same line for Adam's two moment buffers): a library's frame (a
 * transformers model) names the allocation well enough. */
static int allocating_frame(const struct mh_reader *r, const uint32_t *frames, size_t n,
                            int any_owner)
{
    int python = -1, op = -1;
    for (size_t i = 0; i < n; i++) {
        struct mh_frame f;
        char name[128];
        if (mh_reader_frame(r, frames[i], &f) != 0)
            continue;
        if (!mh__frame_is_internal(f.file, f.func)) {
            if (any_owner)
                return python >= 0 ? python : op;
            return mh__frame_is_program(f.file, f.func) ? python : -1;
        }
        if (python < 0 && python_file(f.file))
            python = (int)i;
        if (op < 0 && mh__frame_aten_op(f.func, name, sizeof name))
            op = (int)i;
    }
    return -1;
}

/* The allocating frame as one short line. */
static void allocating_text(const struct mh_frame *f, char *buf, size_t len)
{
    char op[128];
    if (mh__frame_aten_op(f->func, op, sizeof op))
        snprintf(buf, len, "aten op %s", op);
    else
        snprintf(buf, len, "%s:%u %s", mh__short_path(f->file), f->line, f->func);
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
                               size_t max_frames, int what_allocated, char *buf, size_t len)
{
    const uint32_t *frames;
    size_t n, used = 0, shown = 0, hidden = 0;
    buf[0] = '\0';
    if (stack == 0 || mh_reader_stack(r, stack, &frames, &n) != 0)
        return buf;
    int skip_internal = has_user_frame(r, frames, n);
    /* framework frames only: from the innermost operation (mh__stack_best_index),
     * named by its label */
    int best = skip_internal ? 0 : mh__stack_best_index(r, stack);
    int program_shown = 0;
    hidden = best > 0 ? (size_t)best : 0;
    int allocating = skip_internal ? allocating_frame(r, frames, n, what_allocated) : -1;
    for (size_t i = hidden; i < n && used + 1 < len; i++) {
        struct mh_frame f;
        int known = mh_reader_frame(r, frames[i], &f) == 0;
        int internal = !known || mh__frame_is_internal(f.file, f.func);
        /* past the limit, the program's innermost frame still shows when
         * library frames (a transformers model) filled the lines */
        int program = known && mh__frame_is_program(f.file, f.func);
        /* framework frames only: past the operation's line, the Python ones */
        int skip = skip_internal ? internal && (int)i != allocating
                                 : (int)i != best && !(known && python_file(f.file));
        if (skip || (shown >= max_frames && (program_shown || !program))) {
            hidden++;
            continue;
        }
        program_shown |= program;
        char frame[512];
        if ((int)i == allocating)
            allocating_text(&f, frame, sizeof frame);
        else if (!skip_internal && (int)i == best)
            mh__stack_label(r, stack, frame, sizeof frame); /* "aten op bmm in BmmBackward0" */
        else
            mh__frame_display(r, frames[i], frame, sizeof frame);
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
