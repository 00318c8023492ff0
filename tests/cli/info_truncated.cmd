info truncated.memhist
