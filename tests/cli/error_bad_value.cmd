report --top zero example.memhist
