"""train_wrapper.py - what a training library puts between a program and
torch (as accelerate's prepare() and AcceleratedOptimizer do): it moves the
model to the GPU and wraps the optimizer, whose step and zero_grad call the
wrapped optimizer's. Used by gpt_train.py --wrapped, so that memory made by
torch under this file's frames (the parameters, the optimizer state) is
seen as a wrapper's."""


class WrappedOptimizer:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def step(self, closure=None):
        return self.optimizer.step(closure)

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)


def prepare(model, optimizer, device="cuda"):
    """The model on `device` and the optimizer wrapped."""
    model.to(device)
    return model, WrappedOptimizer(optimizer)
