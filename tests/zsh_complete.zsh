#!/bin/zsh -f
# zsh_complete.zsh — what zsh's completion offers for a command line, with flashdemo's _flashdemo
# loaded from DIR: one candidate per line. Usage: zsh -f zsh_complete.zsh DIR 'flashdemo --lang '
# (tests/cli/test_completion.cpp). An interactive zsh in a pseudo-terminal (zsh/zpty) runs compinit,
# records every candidate compadd is given, and completes the line typed into it.
zmodload zsh/zpty || exit 77
zpty z zsh -f -i
zpty -w z "cd ${(q)1}; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D"
# The markers are split in what is typed, so that the terminal's echo of it never matches.
zpty -w z 'compadd () { builtin compadd -O __h "$@"; local x; for x in $__h; do print -r -- "<H""IT>$x</H""IT>"; done; builtin compadd "$@" }'
zpty -w z 'comptest () { zle -I; zle complete-word; print -r -- "<DO""NE>" }'
zpty -w z 'zle -N comptest; bindkey "^T" comptest'
zpty -n -w z "$2"$'\x14'
local line
while zpty -r z line; do
  [[ $line == *'<DONE>'* ]] && break
  [[ $line == *'<HIT>'* ]] && print -r -- ${${line##*<HIT>}%%</HIT>*}
done
zpty -d z
