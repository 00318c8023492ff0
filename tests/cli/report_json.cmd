report --json --top 3 example.memhist
