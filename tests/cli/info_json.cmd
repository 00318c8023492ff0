info --json example.memhist
