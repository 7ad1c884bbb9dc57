# zsh -f zsh_capture.zsh FPATH_DIR LINE: prints the matches zsh's completion system offers for
# LINE followed by TAB, one a line, from the completion functions in FPATH_DIR. An interactive
# zsh runs in a pseudo-terminal (zpty); compadd is wrapped to print what it adds, and the shell
# exits after the first completion. The markers are quoted apart in what is typed, so that
# the terminal's and zle's echo of the typed lines never matches them.
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'bindkey "^I" complete-word; zstyle ":completion:*" list-grouped false; zstyle ":completion:*" insert-tab false'
zpty -w z 'null-line() { print -r -- "@@EN""D@@"; }; compprefuncs=(); comppostfuncs=(null-line exit)'
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; local h; for h in $__hits; do print -r -- "@@HI""T@@$h"; done; }'
zpty -w z 'print -r -- @@READ""Y@@'
zpty -r z line '*@@READY@@*'
zpty -w -n z "$2"$'\t'
while zpty -r z line; do
  [[ $line == *@@HIT@@* ]] && print -r -- "${${line##*@@HIT@@}%%$'\r'}"
  [[ $line == *@@END@@* ]] && break
done
zpty -d z
