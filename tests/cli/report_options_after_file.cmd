report example.memhist --top 2 --frames 1
