#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# licence.sh: every source of the project carries its licence as its first
# comment line, `SPDX-License-Identifier: Apache-2.0`: line 1 of a .c, a .h
# and a Makefile (`/* ... */` or `# ...`), the line after the `#!` of a shell
# script (.sh, .bash, or any file that starts with #!sh or #!bash). Fails
# (exit 1) naming each file that lacks it, with the line to add.
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
spdx='SPDX-License-Identifier: Apache-2.0'
# The tracked files and the new ones not ignored; without git, the tree less
# the build outputs.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files --cached --others --exclude-standard)
else
    files=$(find . -path ./build -prune -o -path ./build-asan -prune -o -path ./build-release \
        -prune -o -path ./build-pkg -prune -o -type f -print | sed 's|^\./||')
fi
bad=0 n=0
for f in $files; do
    [ -f "$f" ] || continue
    first=$(head -n 1 "$f" | tr -d '\000')
    case $f in
    *.c | *.h) want="/* $spdx */" line=1 ;;
    Makefile | */Makefile | *.mk) want="# $spdx" line=1 ;;
    *.sh | *.bash) want="# $spdx" line=1 ;;
    *)
        case $first in
        '#!'*sh | '#!'*'sh '* | '#!'*bash*) want="# $spdx" line=1 ;;
        *) continue ;;
        esac ;;
    esac
    case $first in '#!'*) line=2 ;; esac
    n=$((n + 1))
    if [ "$(sed -n "${line}p" "$f")" != "$want" ]; then
        echo "licence: $f: line $line is not '$want' (the SPDX line comes first, before the file's own first comment)"
        bad=1
    fi
done
[ "$bad" = 0 ] || exit 1
echo "licence: $n sources carry '$spdx' as their first comment line"
