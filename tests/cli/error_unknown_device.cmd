report --device 3 example.memhist
