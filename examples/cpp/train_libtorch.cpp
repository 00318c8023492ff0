/* train_libtorch.cpp - a libtorch training loop recorded through memhist's C API.
 *
 *   example_cpp_train_libtorch [FILE] [STEPS]
 *   memhist report FILE
 *
 * Opens a recorder with the torch bridge's stack resolver (mh_torch_open),
 * attaches the bridge (it initializes CUDA if needed and refuses clearly under
 * backend:cudaMallocAsync), trains a small MLP with AdamW, marks each step
 * explicitly (libtorch's C++ optimizers emit no Optimizer.step# ranges), then
 * stops the bridge and closes the file. Without a GPU it says why and exits 0
 * without recording. */
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "memhist/error.h"
#include "memhist/torch.h"

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libtorch.memhist";
    int steps = argc > 2 ? atoi(argv[2]) : 10;
    if (!torch::cuda::is_available()) {
        printf("no CUDA device: nothing to record\n");
        return 0;
    }
    mh_recorder *rec = nullptr;
    int rc = mh_torch_open(path, nullptr, &rec);
    if (rc < 0) {
        fprintf(stderr, "cannot create %s: %s\n", path, mh_strerror(rc));
        return 1;
    }
    mh_torch_opts opts{};
    opts.stacks = MH_TORCH_STACKS_ALL; /* no Python here: C++ frames */
    if ((rc = mh_torch_attach(rec, &opts)) < 0)
        fprintf(stderr, "not recording: %s (%s)\n", mh_torch_error(), mh_strerror(rc));

    torch::Device dev(torch::kCUDA);
    torch::nn::Sequential model(torch::nn::Linear(1024, 4096), torch::nn::ReLU(),
                                torch::nn::Linear(4096, 1024));
    model->to(dev);
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
    for (int s = 0; s < steps; s++) {
        auto x = torch::randn({256, 1024}, dev);
        auto loss = (model->forward(x) - x).pow(2).mean();
        opt.zero_grad();
        loss.backward();
        opt.step();
        mh_torch_step();
    }
    mh_torch_mark("done");
    mh_torch_stop();
    rc = mh_recorder_close(rec);
    printf("recorded %d steps to %s%s\n", steps, path, rc < 0 ? " (write failed)" : "");
    return rc < 0 ? 1 : 0;
}
