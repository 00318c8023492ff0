"""memhist._rank - which rank this process is, and what its recording says
about it.

The rank comes from torchrun's environment (RANK, else LOCAL_RANK) as it was
when recording was installed in the process, else from torch.distributed
once it is initialized (a process started by torch.multiprocessing.spawn,
Lightning's rank 0): note_dist_rank then writes it to the recording's header
as torchrun's RANK would be. who() names the process in memhist's status
lines and warnings; header_meta() is what the header says about it, so rank
files can be grouped without relying on their names. Used by the recording
session (memhist), its optimizer hooks (memhist._steps), `memhist record`'s
side in the program (memhist._record) and the virtual device's warnings.
"""
import os
import sys

_state = {"start_rank": (), "dist_rank": None}


def env_int(name):
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


def env_rank():
    """The rank torchrun's environment gives (RANK, else LOCAL_RANK), or None."""
    rank = env_int("RANK")
    return rank if rank is not None else env_int("LOCAL_RANK")


def remember_start_rank():
    """Recording is installed in this process (memhist._record.install)."""
    _state["start_rank"] = (env_rank(),)


def start_rank():
    """env_rank() when recording was installed in this process (else now):
    a launcher that sets RANK or LOCAL_RANK in its own process later
    (Lightning's, as rank 0) stays the process it was, and its rank comes
    from torch.distributed (note_dist_rank)."""
    return _state["start_rank"][0] if _state["start_rank"] else env_rank()


def note_dist_rank(core, rec, dist):
    """The rank of a process started without torchrun's environment, from
    torch.distributed `dist` once it is initialized: the header of recording
    `rec` says it (through the recorder library `core`), as torchrun's RANK
    would, and who() names the process by it."""
    for key, value in (("rank", dist.get_rank()), ("world_size", dist.get_world_size())):
        core.mh_recorder_set_meta(rec, key.encode(), str(value).encode())
    core.mh_recorder_set_meta(rec, b"rank_process", b"main")
    _state["dist_rank"] = dist.get_rank()


def is_rank_main():
    """True in the process torchrun started for the rank; False in processes
    it spawned (they inherit RANK and MEMHIST_RANK_PID)."""
    return os.environ.get("MEMHIST_RANK_PID") == str(os.getpid())


def who():
    """How the status lines name this process."""
    rank = start_rank()
    if rank is None and _state["dist_rank"] is not None:
        return "rank %d (process %d)" % (_state["dist_rank"], os.getpid())
    if rank is None:
        return "process %d" % os.getpid()
    if not is_rank_main():
        return "rank %d helper (process %d)" % (rank, os.getpid())
    return "rank %d (process %d)" % (rank, os.getpid())


def header_meta():
    """What the recording's header says about the process, so rank files
    can be grouped without relying on their names."""
    import socket
    meta = {"host": socket.gethostname(), "pid": os.getpid(), "parent_pid": os.getppid(),
            "cwd": os.getcwd(), "sys_prefix": sys.prefix}
    keys = (("rank", "RANK"), ("local_rank", "LOCAL_RANK"), ("world_size", "WORLD_SIZE"),
            ("attempt", "TORCHELASTIC_RESTART_COUNT"))
    for key, env in keys:
        if env_int(env) is not None:
            meta[key] = env_int(env)
    if env_rank() is not None:
        meta["rank_process"] = "main" if is_rank_main() else "helper"
    return {k: str(v) for k, v in meta.items()}
