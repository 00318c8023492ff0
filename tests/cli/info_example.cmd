info example.memhist
