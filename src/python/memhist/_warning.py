"""memhist._warning - the warning memhist gives where it cannot do what it
was asked and the program runs on (memhist.MemhistWarning)."""


class MemhistWarning(RuntimeWarning):
    """Recording could not start or stopped early; the program runs on."""


MemhistWarning.__module__ = "memhist"
