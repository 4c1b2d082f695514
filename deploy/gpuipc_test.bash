# SPDX-License-Identifier: Apache-2.0
# gpuipc_test.bash: bash completion for gpuipc_test (installed as
# share/bash-completion/completions/gpuipc_test). The options and the
# mechanism names come from the program's own --help, read once per shell
# for each program path, so they are always the installed program's; an
# option that takes a FILE or a socket PATH completes file names.

# Prints the options (one a line) or, with "mechs", the mechanism names of
# the program $1, from its --help.
_gpuipc_test_help()
{
    local prog=$1 what=$2
    "$prog" --help 2>/dev/null | if [[ $what == mechs ]]; then
        # "Mechanisms:" heading, then "  name  (default)summary" lines (the
        # summaries' continuation lines are indented further) up to a blank line.
        sed -n '/^Mechanisms:$/,/^$/s/^  \([a-z0-9][a-z0-9-]*\) .*/\1/p'
    else
        sed -n '/^Options:$/,/^Mechanisms:$/p' |
            grep -oE '^  (-[a-zA-Z], )?--[a-z][a-z-]*' | tr ',' '\n' | tr -d ' '
    fi
}

_gpuipc_test()
{
    local cur prev prog=${COMP_WORDS[0]} key
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    [[ $COMP_CWORD -gt 0 ]] || return 0
    # One reading of --help per program path and shell.
    key=$(type -P "$prog" 2>/dev/null || printf '%s' "$prog")
    if [[ ${_gpuipc_test_key-} != "$key" ]]; then
        _gpuipc_test_key=$key
        _gpuipc_test_opts=$(_gpuipc_test_help "$prog" opts)
        _gpuipc_test_mechs=$(_gpuipc_test_help "$prog" mechs)
    fi
    case $prev in
    --only | --require)
        # A comma-separated list: complete the name after the last comma.
        local done_part='' word=$cur
        if [[ $cur == *,* ]]; then
            done_part=${cur%,*},
            word=${cur##*,}
        fi
        mapfile -t COMPREPLY < <(compgen -P "$done_part" -W "$_gpuipc_test_mechs" -- "$word")
        [[ ${#COMPREPLY[@]} -ne 1 ]] || compopt -o nospace 2>/dev/null
        return 0 ;;
    --json | --prom | --junit | --serve | --connect)
        # A file; --serve and --connect also take @NAME (nothing to complete).
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return 0 ;;
    --device | --pairs)
        mapfile -t COMPREPLY < <(compgen -W "all" -- "$cur")
        return 0 ;;
    --deadline)
        mapfile -t COMPREPLY < <(compgen -W "none" -- "$cur")
        return 0 ;;
    --size | --chunks | --min-gbps | --expect-gpus | --timeout | --repeat | --allow-uid | --iters)
        # A number: nothing to offer.
        return 0 ;;
    esac
    if [[ $cur == -* || -z $cur ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$_gpuipc_test_opts" -- "$cur")
    fi
    return 0
}
complete -F _gpuipc_test gpuipc_test
