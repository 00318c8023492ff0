# embed_text.cmake - `cmake -DIN=FILE -DOUT=FILE.c -DNAME=SYMBOL -P embed_text.cmake` writes
# OUT, a C file defining `const char SYMBOL[]` as the bytes of IN and a final NUL: how the
# page template of `memhist view` (viz/view/view.css, view.js) is built into the command.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(base "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* generated from ${base} by cmake/embed_text.cmake */\n"
     "const char ${NAME}[] = {${bytes}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
