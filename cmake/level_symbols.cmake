# level_symbols.cmake — one level's build of the fast path's kernels, made safe to link beside the
# others: every symbol it defines that is not in its own namespace (KEEP, e.g. "8level_v4" as it
# appears in mangled names) gets a suffix of its own (SUFFIX, ".fdlevel.4").
#
# Those symbols are the inline functions, templates and static members of the headers it includes
# (libstdc++, Eigen, the host+device tile math): every file that uses one defines it, and the
# linker keeps one copy for the whole program. The copy compiled for AVX-512 could then be the one
# that portable code calls, on a CPU without AVX-512. Renamed, each level's code calls only its own
# copies. (The suffix reads as a clone, "[clone .fdlevel.4]", in a debugger's demangled names.)
#
# cmake -DNM=nm -DOBJCOPY=objcopy -DIN=a.o -DOUT=b.o -DKEEP=8level_v4 -DSUFFIX=.fdlevel.4 -P ...
execute_process(COMMAND ${NM} --defined-only -P ${IN} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE rc COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" lines "${symbols}")
set(map "")
set(count 0)
foreach(line IN LISTS lines)
  # "name type [value size]": global (upper case but U), unique global (u) and weak (V, W) symbols
  if(line MATCHES "^([^ ]+) ([A-TV-Zu]) ")
    set(name "${CMAKE_MATCH_1}")
    string(FIND "${name}" "${KEEP}" at)
    if(at EQUAL -1)
      string(APPEND map "${name} ${name}${SUFFIX}\n")
      math(EXPR count "${count} + 1")
    endif()
  endif()
endforeach()
file(WRITE ${OUT}.map "${map}")
execute_process(COMMAND ${OBJCOPY} --redefine-syms=${OUT}.map ${IN} ${OUT}
                COMMAND_ERROR_IS_FATAL ANY)
