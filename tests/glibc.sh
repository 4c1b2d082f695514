#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# glibc.sh BINARY [MAX]: the ratchet of the distributed binary: fails (exit
# 1) when BINARY needs a glibc symbol version above MAX (default 2.28, the
# oldest glibc of the GPU nodes it must run on: RHEL 8), naming each symbol
# that does; prints the highest one needed otherwise. Reads objdump -T.
bin=${1:?usage: glibc.sh BINARY [MAX]}
max=${2:-2.28}
command -v objdump >/dev/null || { echo "glibc: no objdump (install binutils)"; exit 2; }
[ -f "$bin" ] || { echo "glibc: $bin: no such file"; exit 2; }
syms=$(objdump -T "$bin" | sed -n 's/.*GLIBC_\([0-9][0-9.]*\)[^ ]* *\([^ ]*\)$/\1 \2/p' | sort -u)
[ -n "$syms" ] || { echo "glibc: $bin: no versioned glibc symbol (not a dynamic executable?)"; exit 2; }
top=$(printf '%s\n' "$syms" | cut -d' ' -f1 | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
above=$(printf '%s\n' "$syms" | while read -r v s; do
    [ "$(printf '%s\n%s\n' "$v" "$max" | sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)" = "$max" ] ||
        echo "  $s (GLIBC_$v)"
done)
if [ -n "$above" ]; then
    echo "glibc: $bin needs glibc $top, above $max, for:"
    printf '%s\n' "$above"
    exit 1
fi
echo "glibc: $bin needs glibc $top at most (the limit is $max)"
