layers --device 3 example.memhist
