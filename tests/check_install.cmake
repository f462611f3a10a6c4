# check_install.cmake — after `cmake --install --prefix ROOT`: the binary, its man page and the
# bash and zsh completion scripts exist where their tools look; with CPACK_CONFIG, the Debian
# package recommends a CJK font.
include(GNUInstallDirs)
set(bash_completion ${CMAKE_INSTALL_DATADIR}/bash-completion/completions/flashdemo)
set(zsh_completion ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions/_flashdemo)
foreach(file bin/flashdemo ${CMAKE_INSTALL_MANDIR}/man1/flashdemo.1 ${bash_completion}
             ${zsh_completion})
  if(NOT EXISTS "${ROOT}/${file}")
    message(FATAL_ERROR "not installed: ${ROOT}/${file}")
  endif()
endforeach()
file(READ "${ROOT}/${CMAKE_INSTALL_MANDIR}/man1/flashdemo.1" page)
if(NOT page MATCHES "\\.TH FLASHDEMO 1")
  message(FATAL_ERROR "flashdemo.1 is not a man page")
endif()
file(READ "${ROOT}/${bash_completion}" bash)
if(NOT bash MATCHES "complete .*flashdemo")
  message(FATAL_ERROR "${bash_completion} is not a bash completion script")
endif()
file(READ "${ROOT}/${zsh_completion}" zsh)
if(NOT zsh MATCHES "^#compdef flashdemo")
  message(FATAL_ERROR "${zsh_completion} is not a zsh completion script")
endif()
# The Debian package (CPack's settings, CPACK_CONFIG): it recommends a CJK font, which the
# HTML replay pages in Chinese need (their font stacks name it first).
if(CPACK_CONFIG)
  include(${CPACK_CONFIG})
  if(NOT CPACK_DEBIAN_PACKAGE_RECOMMENDS MATCHES "fonts-noto-cjk")
    message(FATAL_ERROR "the Debian package does not recommend fonts-noto-cjk: "
                        "'${CPACK_DEBIAN_PACKAGE_RECOMMENDS}'")
  endif()
endif()
message(STATUS "installed: bin/flashdemo, the man page and the completion scripts")
