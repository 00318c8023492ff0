report no-such-file.memhist
