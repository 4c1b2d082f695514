#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# layers.sh: checks that lib/'s layers include only the layers below them
# (core < wire < session, run, launch < mech, gpu < mech/cuda < bench <
# bench/cuda < app < app/cuda), and that no code outside a cuda/ folder or gpu/
# includes one.
# Prints each include that goes the wrong way; exits 1 if there is any.
rank() {
    case $1 in
    core) echo 0 ;; wire) echo 1 ;; session | run | launch) echo 2 ;; mech | gpu) echo 3 ;;
    mech/cuda) echo 4 ;; bench) echo 5 ;; bench/cuda) echo 6 ;; app) echo 7 ;;
    app/cuda) echo 8 ;; *) echo 99 ;;
    esac
}
gpu_dir() {
    case $1 in gpu | */cuda) return 0 ;; *) return 1 ;; esac
}
cd "$(dirname "$0")/../lib" || exit 2
bad=0
for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
    from=$(dirname "$f")
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
        to=$(dirname "$inc")
        [ "$to" = . ] && to=$from
        if [ "$(rank "$to")" -gt "$(rank "$from")" ] ||
           { gpu_dir "$to" && ! gpu_dir "$from" && [ "$(rank "$from")" -lt 8 ] &&
             [ "$from" != app/cuda ]; }; then
            echo "lib/$f includes $inc: $to is above $from"
            bad=1
        fi
    done
done
[ $bad = 0 ] && echo "layers: every include in lib/ goes to the same layer or one below"
exit $bad
