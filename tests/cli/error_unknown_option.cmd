report --bogus example.memhist
