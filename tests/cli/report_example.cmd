report example.memhist
