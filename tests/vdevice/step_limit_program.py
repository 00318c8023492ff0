"""step_limit_program.py - a small training loop for tests/vdevice/step_limit.py:
each iteration appends its number to DIR/iterations, then runs a forward,
backward and optimizer step; a `finally` block writes DIR/finally and an
atexit handler DIR/atexit, so the test sees how the program ended.

    python step_limit_program.py DIR [--steps N] [--thread] [--api PATH N]

--thread runs the loop in a thread of its own; --api records it in-process
with memhist.start(PATH, stop_after_steps=N), catches memhist.StepLimitReached
and writes "caught STEPS STATUS" to DIR/caught.
"""
import argparse
import atexit
import os
import threading

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--thread", action="store_true")
    ap.add_argument("--api", nargs=2)
    a = ap.parse_args()

    def mark(name, text=""):
        with open(os.path.join(a.dir, name), "a") as f:
            f.write(text)

    atexit.register(mark, "atexit")
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
    opt = torch.optim.AdamW(model.parameters())

    def train():
        for i in range(a.steps):
            mark("iterations", "%d\n" % i)
            model(torch.randn(32, 256, device="cuda")).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    if a.api:
        import memhist
        memhist.start(a.api[0], stop_after_steps=int(a.api[1]))
        try:
            train()
        except memhist.StepLimitReached as e:
            memhist.stop()
            mark("caught", "caught %d %s" % (e.steps, memhist.status()))
        return
    try:
        if a.thread:
            t = threading.Thread(target=train)
            t.start()
            t.join()
        else:
            train()
    finally:
        mark("finally")


if __name__ == "__main__":
    main()
