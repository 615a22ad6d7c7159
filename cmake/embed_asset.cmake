# cmake -DIN=file -DOUT=file.c -DNAME=c_identifier -P embed_asset.cmake
# Writes IN's bytes as `const char NAME[]` (NUL-terminated) and
# `const size_t NAME_len` (without the NUL): the HTML report's JS and CSS
# stay editable files (src/output/assets/) and ship inside the binary.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR len "${nhex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){24})" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp"
  "/* generated from ${IN} by cmake/embed_asset.cmake; do not edit */\n"
  "#include <stddef.h>\n"
  "#include \"output/out_assets.h\"\n"
  "const char ${NAME}[] = {\n${body}0x00};\n"
  "const size_t ${NAME}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
