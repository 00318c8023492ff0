"""memhist._scopebase - what the module scope and role modules share.

The numbers that scope and tag events carry (include/memhist/event.h:
MH_PHASE_FORWARD/BACKWARD, MH_ROLE_*), and the torch functions the hooks
call that an older torch may lack, with what stands in for them.
"""

FORWARD, BACKWARD = 1, 2
PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE, OUTPUT = 1, 2, 3, 4, 5


def is_compiling():
    """torch.compiler.is_compiling where torch has it (a constant to Dynamo)."""
    try:
        import torch
        return torch.compiler.is_compiling
    except (ImportError, AttributeError):
        return lambda: False


def sequence_number():
    """This thread's next autograd sequence number, where torch says it;
    else a function returning None (every node counts)."""
    try:
        import torch
        return torch._C._autograd._get_sequence_nr
    except (ImportError, AttributeError):
        return lambda: None
