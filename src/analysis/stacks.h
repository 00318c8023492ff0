/* stacks.h - naming stacks for people.
 *
 * Outputs (report, plot legend, layer attribution) label a group of
 * allocations by its most informative frame: the innermost frame of user
 * code or of an installed library other than torch (a transformers model's
 * forward), skipping PyTorch internals, the Python interpreter and its
 * standard library, and unresolved C++ frames. Definitions come from the reader that read the file.
 */
#ifndef MH_ANALYSIS_STACKS_H
#define MH_ANALYSIS_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "memhist/reader.h"

/* File name of a frame the recorder made to name an allocation with no
 * Python frame by its torch op (function: the op); FORMAT.md, "Frames".
 * Labelled "torch internal: <op>". */
#define MH__FRAME_TORCH_INTERNAL "torch internal"
/* File name of the frame the recorder gives the blocks it found live when it
 * started (FORMAT.md, "Frames"). Labelled by its function alone. */
#define MH__FRAME_BEFORE_RECORDING "before recording"

/* 1 if a frame belongs to framework or interpreter internals. */
int mh__frame_is_internal(const char *file, const char *func);
/* 1 if a frame is the program's own code: not internal and not of an
 * installed package. */
int mh__frame_is_program(const char *file, const char *func);
/* 1 if a frame of the stack is code torch.compile generated: an FX graph
 * module's ("<eval_with_key>.N") or Inductor's output code (its cache
 * directory, "torchinductor_<user>"). Module scopes do not see inside it. */
int mh__stack_is_compiled(const struct mh_reader *r, uint32_t stack);
/* Index (innermost = 0) of the most informative frame of a stack, or -1 if
 * the stack is empty or unknown. */
int mh__stack_best_index(const struct mh_reader *r, uint32_t stack);
/* The ATen operation a C++ frame runs ("at::_ops::silu::call(...)" ->
 * "silu") into `op`; 0 if the frame is not in an operation's entry. */
int mh__frame_aten_op(const char *func, char *op, size_t len);
/* "file:line func" of the most informative frame ("<no stack>" if none),
 * with the file name shortened to its last two path components; "torch
 * internal: <op>" for an op frame, "native code in <library> (no symbol)"
 * for an unresolved address. Among C++ frames only, the most informative is
 * the innermost ATen operation that is not an empty tensor's ("aten op bmm",
 * "in BmmBackward0" where autograd's node ran it), else the innermost other
 * ATen function, else the innermost named function that is not the
 * allocator, memhist or the C/C++ runtime. Returns buf. */
const char *mh__stack_label(const struct mh_reader *r, uint32_t stack, char *buf, size_t len);
/* The last two components of a path ("pkg/mod.py" of "/a/b/pkg/mod.py"). */
const char *mh__short_path(const char *file);
/* "file:line func" for one frame id (full file name). Returns buf. */
const char *mh__frame_text(const struct mh_reader *r, uint32_t frame, char *buf, size_t len);
/* The same with the file as text outputs show it (mh__display_path). */
const char *mh__frame_display(const struct mh_reader *r, uint32_t frame, char *buf, size_t len);
/* A file as text outputs show it: relative to the package directory it is
 * installed in (site-packages, dist-packages: "transformers/models/gpt2/
 * modeling_gpt2.py") or to the standard library's, else to the recorded
 * program's working directory or interpreter prefix (the header's "cwd" and
 * "sys_prefix"; `r` may be NULL), else whole. Points into `file`. */
const char *mh__display_path(const struct mh_reader *r, const char *file);

#endif
