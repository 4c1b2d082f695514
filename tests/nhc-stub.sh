#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# nhc-stub.sh CONF SCRIPTS_DIR: the part of LBNL NHC's interface that a
# check uses, for tests/recipes.sh (Debian has no NHC): it sources every
# *.nhc file in SCRIPTS_DIR, runs each "TARGET || CHECK ARGS" line of CONF
# whose TARGET is "*", and stands in for NHC's die (record the message,
# return the status). It prints each death as "DIED <status>: <message>"
# and exits 1 if a check died or returned non-zero, else 0.
conf=$1
dir=$2
died=0
function die() {
    local status=$1
    shift
    echo "DIED $status: $*"
    died=1
    return "$status"
}
for f in "$dir"/*.nhc; do
    . "$f" || exit 2
done
while IFS= read -r line; do
    case $line in
    '' | '#'*) continue ;;
    esac
    target=${line%%||*}
    check=${line#*||}
    target=${target//[[:space:]]/}
    [ "$target" = "*" ] || continue
    eval "$check" || died=1
done < "$conf"
exit $died
