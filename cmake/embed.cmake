# embed.cmake — turns the HTML replay page into a C++ string (cmake -DIN=... -DOUT=... -P).
file(READ "${IN}" content)
string(FIND "${content}" ")FDHTML\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )FDHTML\"")
endif()
# MSVC-style limits do not apply to GCC/Clang; one raw string holds the whole page.
file(WRITE "${OUT}" "// Generated from demos/ui/replay.html by cmake/embed.cmake; do not edit.\n"
                    "namespace fd::ui {\nextern const char kReplayTemplate[];\n"
                    "const char kReplayTemplate[] = R\"FDHTML(${content})FDHTML\";\n}\n")
