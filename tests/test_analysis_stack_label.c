/* test_analysis_stack_label.c - names of allocation stacks for people
 * (src/analysis/stack_label.c): user code first; an allocation made with
 * no Python frame is named by the torch op the recorder gave it ("torch
 * internal: MmBackward0"); a C++-only stack by its ATen operation and the
 * autograd node that ran it ("aten op bmm in BmmBackward0"), else by the
 * nearest named function that is not the allocator, memhist or the C/C++
 * runtime; never by a bare library offset. */
#include <criterion/criterion.h>
#include <string.h>

#include "memhist/memhist.h"
#include "stacks.h"

struct book {
    struct mh_writer *w;
    struct mh_reader *r;
};

/* A stack of `n` (file, function, line) frames, innermost first. */
static uint32_t stack_of(struct book *b, const char *const (*frames)[2], const uint32_t *lines,
                         size_t n)
{
    uint32_t ids[8];
    for (size_t i = 0; i < n; i++)
        ids[i] = (uint32_t)mh_writer_intern_frame(b->w, frames[i][0], frames[i][1], lines[i]);
    return (uint32_t)mh_writer_intern_stack(b->w, ids, n);
}

/* Writes an allocation per stack (definitions go out before their first
 * use), then reads everything back. */
static void book_read(struct book *b, const uint32_t *stacks, size_t n)
{
    const void *data;
    size_t len;
    for (size_t i = 0; i < n; i++) {
        struct mh_event e;
        memset(&e, 0, sizeof e);
        e.time_ns = 1000 + i;
        e.kind = MH_EV_ALLOC;
        e.addr = 0x1000 * (i + 1);
        e.size = 512;
        e.stack = stacks[i];
        cr_assert_eq(mh_writer_event(b->w, &e), 0);
    }
    cr_assert_eq(mh_writer_close(b->w), 0);
    cr_assert_eq(mh_writer_mem(b->w, &data, &len), 0);
    cr_assert_eq(mh_reader_open_mem(data, len, &b->r), 0);
    struct mh_event e;
    while (mh_reader_next(b->r, &e) > 0)
        ;
}

Test(analysis_stack_label, names_allocations_without_a_python_frame)
{
    struct book b;
    memset(&b, 0, sizeof b);
    cr_assert_eq(mh_writer_open_mem(NULL, &b.w), 0);
    static const char *const op[][2] = {{"torch internal", "MmBackward0"}};
    static const char *const aten[][2] = {
        {"/x/libc10_cuda.so", "??"},
        {"/x/libc10_cuda.so", "c10::cuda::CUDACachingAllocator::Native::malloc(int)"},
        {"/x/libtorch_cuda.so", "at::cuda::allocateCUDABlasWorkspace(unsigned long)"},
        {"/x/libtorch_cuda.so", "at::native::structured_mm_out_cuda::impl()"}};
    static const char *const plain[][2] = {
        {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6:869538", "??"},
        {"/x/libc10_cuda.so", "c10::cuda::CUDACachingAllocator::Native::malloc(int)"},
        {"/x/libmemhist_torch.so", "mh__stack_capture"},
        {"/x/libnccl.so.2", "ncclCommInitRank"}};
    static const char *const bare[][2] = {{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6:869538", "??"},
                                          {"/x/libfoo.so+0x1f00", ""}};
    static const char *const user[][2] = {{"/x/libtorch_cuda.so", "at::native::mm()"},
                                          {"/home/me/train.py", "forward"}};
    static const uint32_t zero[4] = {0, 0, 0, 0}, user_lines[2] = {0, 12};
    /* as torch's snapshots give native frames: the offset in the library as the line */
    static const uint32_t offsets[4] = {319562, 68989582, 68158710, 68158999};
    uint32_t s_op = stack_of(&b, op, zero, 1), s_aten = stack_of(&b, aten, offsets, 4);
    uint32_t s_plain = stack_of(&b, plain, zero, 4), s_bare = stack_of(&b, bare, zero, 2);
    uint32_t s_user = stack_of(&b, user, user_lines, 2);
    const uint32_t all[] = {s_op, s_aten, s_plain, s_bare, s_user};
    book_read(&b, all, 5);
    char buf[256];
    cr_expect_str_eq(mh__stack_label(b.r, s_op, buf, sizeof buf), "torch internal: MmBackward0");
    mh__stack_label(b.r, s_aten, buf, sizeof buf);
    cr_expect(strstr(buf, "at::cuda::allocateCUDABlasWorkspace") != NULL, "got '%s'", buf);
    cr_expect(strstr(buf, "68158710") == NULL, "a library's offset is no line: '%s'", buf);
    mh__stack_label(b.r, s_plain, buf, sizeof buf);
    cr_expect(strstr(buf, "ncclCommInitRank") != NULL, "got '%s'", buf);
    mh__stack_label(b.r, s_bare, buf, sizeof buf);
    cr_expect(strstr(buf, "??") == NULL && strstr(buf, ":869538") == NULL, "got '%s'", buf);
    cr_expect(strstr(buf, "native code in lib") && strstr(buf, "(no symbol)"),
              "the library is named: '%s'", buf);
    mh__stack_label(b.r, s_user, buf, sizeof buf);
    cr_expect(strstr(buf, "train.py:12 forward") != NULL, "user code first: '%s'", buf);
    /* the frame text in full stacks (report) reads the same */
    const uint32_t *frames;
    size_t n;
    cr_assert_eq(mh_reader_stack(b.r, s_op, &frames, &n), 0);
    cr_expect_str_eq(mh__frame_text(b.r, frames[0], buf, sizeof buf),
                     "torch internal: MmBackward0");
    cr_assert_eq(mh_reader_stack(b.r, s_aten, &frames, &n), 0);
    cr_expect_str_eq(
        mh__frame_text(b.r, frames[2], buf, sizeof buf),
        "/x/libtorch_cuda.so+0x41004f6 at::cuda::allocateCUDABlasWorkspace(unsigned long)");
    mh_reader_close(b.r);
    mh_writer_free_mem(b.w);
}

/* As torch's snapshots with stacks="all" give autograd's allocations: the
 * operation, not the helper making its output or the empty tensor it asks
 * for, with the node that ran it. */
Test(analysis_stack_label, names_cpp_stacks_by_operation_and_autograd_node)
{
    struct book b;
    memset(&b, 0, sizeof b);
    cr_assert_eq(mh_writer_open_mem(NULL, &b.w), 0);
    static const char *const bmm[][2] = {
        {"CUDACachingAllocator.cpp", "c10::cuda::CUDACachingAllocator::Native::malloc(int)"},
        {"??", "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"},
        {"RegisterCUDA.cpp", "at::(anonymous namespace)::create_out(c10::ArrayRef<long>)"},
        {"??", "at::_ops::bmm::redispatch(c10::DispatchKeySet, at::Tensor const&)"},
        {"??", "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"},
        {"??", "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)"},
        {"??", "torch::autograd::Engine::thread_main()"},
        {"", "__clone3"}}; /* glibc's thread start, as torch's snapshots name it */
    static const char *const zeros[][2] = {
        {"??", "at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)"},
        {"??", "at::_ops::new_zeros::call(at::Tensor const&, c10::ArrayRef<c10::SymInt>)"},
        {"??", "at::native::foo()"}};
    /* only empty tensors' operations: the one autograd asked for */
    static const char *const copy[][2] = {
        {"??", "torch::unwind::unwind()"},
        {"??", "torch::CapturedTraceback::gather(bool, bool, bool)"},
        {"??", "at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)"},
        {"??", "at::native::new_empty_strided_symint(at::Tensor const&)"},
        {"??", "at::_ops::new_empty_strided::call(at::Tensor const&)"},
        {"tensor.cpp", "std::vector<at::Tensor> torch::autograd::CopySlices::apply_impl<F>(F)"},
        {"??", "torch::autograd::CopySlices::apply(std::vector<at::Tensor>&&)"}};
    static const uint32_t zero[8] = {0};
    uint32_t s_bmm = stack_of(&b, bmm, zero, 8), s_zeros = stack_of(&b, zeros, zero, 3);
    uint32_t s_copy = stack_of(&b, copy, zero, 7);
    const uint32_t all[] = {s_bmm, s_zeros, s_copy};
    book_read(&b, all, 3);
    char buf[256];
    cr_expect_str_eq(mh__stack_label(b.r, s_bmm, buf, sizeof buf), "aten op bmm in BmmBackward0");
    cr_expect_str_eq(mh__stack_label(b.r, s_zeros, buf, sizeof buf), "aten op new_zeros");
    cr_expect_str_eq(mh__stack_label(b.r, s_copy, buf, sizeof buf),
                     "aten op new_empty_strided in CopySlices");
    mh_reader_close(b.r);
    mh_writer_free_mem(b.w);
}

/* An installed library's model code (a transformers forward) names the
 * allocation; torch, whether installed or a source tree, the standard
 * library and memhist's own package never do. */
Test(analysis_stack_label, installed_libraries_name_their_allocations)
{
    struct book b;
    memset(&b, 0, sizeof b);
    cr_assert_eq(mh_writer_open_mem(NULL, &b.w), 0);
    static const char *const hf[][2] = {
        {"/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", "forward"},
        {"/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", "_call_impl"},
        {"/venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py", "forward"},
        {"/usr/lib/python3.12/contextlib.py", "inner"},
        {"/home/me/train.py", "<module>"}};
    static const char *const deb[][2] = {
        {"/usr/lib/python3/dist-packages/torch/functional.py", "einsum"},
        {"/usr/lib/python3/dist-packages/timm/models/resnet.py", "forward"},
        {"/home/me/train.py", "<module>"}};
    static const char *const source_tree[][2] = {
        {"/src/pytorch/torch/nn/modules/conv.py", "_conv_forward"},
        {"/src/pytorch/torch/_tensor.py", "backward"},
        {"/opt/lib/python3.11/site-packages/memhist/_scopes.py", "_enter"},
        {"/opt/lib/python3.11/functools.py", "wrapper"},
        {"/home/me/model.py", "forward"}};
    static const uint32_t lines[5] = {125, 1775, 242, 81, 9};
    uint32_t s_hf = stack_of(&b, hf, lines, 5), s_deb = stack_of(&b, deb, lines, 3);
    uint32_t s_src = stack_of(&b, source_tree, lines, 5);
    const uint32_t all[] = {s_hf, s_deb, s_src};
    book_read(&b, all, 3);
    char buf[256];
    cr_expect_str_eq(mh__stack_label(b.r, s_hf, buf, sizeof buf),
                     "gpt2/modeling_gpt2.py:242 forward");
    cr_expect_str_eq(mh__stack_label(b.r, s_deb, buf, sizeof buf), "models/resnet.py:1775 forward");
    cr_expect_str_eq(mh__stack_label(b.r, s_src, buf, sizeof buf), "me/model.py:9 forward");
    mh_reader_close(b.r);
    mh_writer_free_mem(b.w);
}

Test(analysis_stack_label, text_outputs_show_files_relative_to_their_package_or_program)
{
    struct book b;
    struct mh_writer_opts wo = {.source = "recorded"};
    cr_assert_eq(mh_writer_open_mem(&wo, &b.w), 0);
    cr_assert_eq(mh_writer_set_meta(b.w, "cwd", "/home/u/proj/"), 0);
    cr_assert_eq(mh_writer_set_meta(b.w, "sys_prefix", "/opt/py"), 0);
    const char *const frames[][2] = {
        {"/opt/py/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py",
         "forward"},
        {"/home/u/proj/train.py", "train_step"}};
    const uint32_t lines[] = {185, 12};
    uint32_t st = stack_of(&b, frames, lines, 2);
    book_read(&b, &st, 1);
    const uint32_t *ids;
    size_t n;
    char buf[256];
    cr_assert_eq(mh_reader_stack(b.r, st, &ids, &n), 0);
    cr_expect_str_eq(mh__frame_display(b.r, ids[0], buf, sizeof buf),
                     "transformers/models/gpt2/modeling_gpt2.py:185 forward");
    cr_expect_str_eq(mh__frame_display(b.r, ids[1], buf, sizeof buf), "train.py:12 train_step");
    cr_expect_str_eq(mh__frame_text(b.r, ids[1], buf, sizeof buf),
                     "/home/u/proj/train.py:12 train_step", "the full path where asked for");
    struct {
        const char *file, *shown;
    } cases[] = {
        {"/usr/lib/python3/dist-packages/numpy/core/x.py", "numpy/core/x.py"},
        {"/opt/py/lib/python3.11/functools.py", "functools.py"},
        {"/opt/py/lib/python3.11/concurrent/futures/thread.py", "concurrent/futures/thread.py"},
        {"/opt/py/bin/torchrun", "bin/torchrun"},
        {"/home/u/proj/sub/model.py", "sub/model.py"},
        {"/home/u/project2/model.py", "/home/u/project2/model.py"},
        {"/home/u/proj", "/home/u/proj"},
        {"model.py", "model.py"},
        {"/x/site-packages/", "/x/site-packages/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_str_eq(mh__display_path(b.r, cases[i].file), cases[i].shown, "%s", cases[i].file);
    cr_expect_str_eq(mh__display_path(NULL, "/home/u/proj/train.py"), "/home/u/proj/train.py",
                     "no header: no working directory");
    mh_reader_close(b.r);
    mh_writer_free_mem(b.w);
}
