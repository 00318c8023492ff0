growth --device 3 example.memhist
