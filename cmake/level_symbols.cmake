# level_symbols.cmake — one level's build of the fast path's kernels, made safe to link beside the
# others: every symbol it defines that is not in its own namespace (KEEP, e.g. "8level_v4" as it
# appears in mangled names) gets a suffix of its own (SUFFIX, ".fdlevel.4"), then the result is
# checked: a symbol left with neither fails the build.
#
# Those symbols are the inline functions, templates and static members of the headers it includes
# (libstdc++, Eigen, the host+device tile math): every file that uses one defines it, and the
# linker keeps one copy for the whole program. The copy compiled for AVX-512 could then be the one
# that portable code calls, on a CPU without AVX-512. Renamed, each level's code calls only its own
# copies. Local symbols are renamed too: a COMDAT group can be named by one (GCC's aliased
# constructors and destructors, more of them at -O0 and -O2), and the linker keeps one group of a
# name for the whole program, whatever the symbol's binding; so are GNU indirect functions (`i`).
# (The suffix reads as a clone, "[clone .fdlevel.4]", in a debugger's demangled names.)
#
# cmake -DNM=nm -DOBJCOPY=objcopy -DIN=a.o -DOUT=b.o -DKEEP=8level_v4 -DSUFFIX=.fdlevel.4 -P ...
function(defined_symbols object out)  # "name" per defined symbol, from nm's portable format
  execute_process(COMMAND ${NM} --defined-only -P ${object} OUTPUT_VARIABLE text
                  COMMAND_ERROR_IS_FATAL ANY)
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([^ ]+) [A-Za-z] ")
      list(APPEND names "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

defined_symbols(${IN} names)
set(map "")
foreach(name IN LISTS names)
  string(FIND "${name}" "${KEEP}" at)
  if(at EQUAL -1)
    string(APPEND map "${name} ${name}${SUFFIX}\n")
  endif()
endforeach()
file(WRITE ${OUT}.map "${map}")
execute_process(COMMAND ${OBJCOPY} --redefine-syms=${OUT}.map ${IN} ${OUT}
                COMMAND_ERROR_IS_FATAL ANY)

defined_symbols(${OUT} names)
string(LENGTH "${SUFFIX}" suffix_length)
foreach(name IN LISTS names)
  string(FIND "${name}" "${KEEP}" at)
  string(LENGTH "${name}" length)
  math(EXPR tail "${length} - ${suffix_length}")
  set(ending "")
  if(tail GREATER_EQUAL 0)
    string(SUBSTRING "${name}" ${tail} -1 ending)
  endif()
  if(at EQUAL -1 AND NOT ending STREQUAL SUFFIX)
    file(REMOVE ${OUT})
    message(FATAL_ERROR "level_symbols: ${name} in ${OUT} is neither in ${KEEP} nor renamed")
  endif()
endforeach()
