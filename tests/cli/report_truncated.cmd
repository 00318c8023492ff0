report truncated.memhist
