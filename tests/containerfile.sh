#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# containerfile.sh ROOT: deploy/Containerfile without docker or podman. Its
# build stage's instructions run in a copy of ROOT, a Debian 11 root standing
# in for debian:bullseye (debootstrap minbase: .ci/packages makes it): COPY of
# the committed tree (git archive HEAD), WORKDIR, and each RUN as written,
# with /bin/sh -c. Then the runtime stage: its COPY --from=build of /out, and
# the ENTRYPOINT with its CMD (and with --only memfd), run here, a Debian 12
# machine as debian:bookworm-slim is. Not done: pulling the images, layers,
# the runtime stage's ENV, and the NVIDIA container toolkit's driver at run
# time (no GPU here). Needs root (chroot) and Debian's package servers (the
# RUN apt-get). Exits 1 at the first failure.
set -eu
base=${1:?usage: containerfile.sh ROOT (a Debian 11 root)}
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "containerfile: NOT RUN: needs root (chroot)"; exit 0; }
[ -x "$base/bin/sh" ] || { echo "containerfile: $base is not a root" >&2; exit 2; }
fail() { echo "containerfile: $*"; exit 1; }
root=$(mktemp -d /var/tmp/gpuipc-containerfile.XXXXXX)
cleanup() {
    umount "$root/proc" 2>/dev/null || true
    if grep -q " $root/" /proc/mounts; then echo "containerfile: $root is still mounted on; left" >&2; return; fi
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
cp -a "$base/." "$root/"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
# The instructions, one a line (continuation lines joined, comments dropped).
steps=$(sed -e '/^[[:space:]]*#/d' deploy/Containerfile | awk '
    { line = line $0 }
    /\\$/ { sub(/\\$/, "", line); next }
    line ~ /[^[:space:]]/ { print line }
    { line = "" }')
stage=0 workdir=/ out='' entrypoint='' cmd=''
runs=0
printf '%s\n' "$steps" > "$root/.steps"
while IFS= read -r step; do
    instr=${step%% *}
    rest=${step#* }
    case $instr in
    FROM)
        stage=$((stage + 1))
        echo "containerfile: stage $stage: FROM $rest" ;;
    COPY)
        if [ "$stage" = 1 ]; then
            [ "$rest" = ". /src" ] || fail "the build stage copies '$rest'; this test knows '. /src'"
            mkdir -p "$root/src"
            # The committed tree; without git or .git (a tarball, CI's
            # fresh root), the tree as it is, less the build outputs.
            if command -v git >/dev/null && git rev-parse --verify -q HEAD >/dev/null 2>&1; then
                git archive HEAD | tar -x -C "$root/src"
            else
                tar -c --exclude=./build --exclude=./build-asan --exclude=./build-release \
                    --exclude=./build-pkg --exclude=./gpuipc_test . | tar -x -C "$root/src"
            fi
        else
            [ "$rest" = "--from=build /out/ /" ] || fail "the runtime stage copies '$rest'; this test knows '--from=build /out/ /'"
            out=$root/out
        fi ;;
    WORKDIR) workdir=$rest ;;
    RUN)
        [ "$stage" = 1 ] || fail "a RUN in the runtime stage: this test runs none there"
        runs=$((runs + 1))
        echo "containerfile: RUN $(printf '%s' "$rest" | tr -s ' ' | cut -c1-100)"
        chroot "$root" /bin/sh -c "cd $workdir && $rest" > "$root/run.log" 2>&1 ||
            { tail -n 20 "$root/run.log"; fail "RUN failed: $rest"; }
        grep -E '^(gpuipc_test|glibc:) ' "$root/run.log" | sed 's/^/  /' || true ;;
    ENV) ;;
    ENTRYPOINT) entrypoint=$rest ;;
    CMD) cmd=$rest ;;
    *) fail "an instruction this test does not know: $instr" ;;
    esac
done < "$root/.steps"
if [ "$runs" = 0 ] || [ -z "$out" ]; then fail "no build stage RUN, or no COPY --from=build"; fi
# ENTRYPOINT and CMD in JSON form: ["/usr/bin/gpuipc_test"], ["--brief"].
entry=$(printf '%s' "$entrypoint" | tr -d '[]"' | tr ',' ' ')
cmd=$(printf '%s' "$cmd" | tr -d '[]"' | tr ',' ' ')
bin=$out$entry
[ -x "$bin" ] || fail "the ENTRYPOINT $entry is not in the build stage's /out"
for f in /usr/share/man/man1/gpuipc_test.1.gz /usr/share/doc/gpuipc-test/copyright; do
    [ -f "$out$f" ] || fail "/out has no $f"
done
rc=0
# shellcheck disable=SC2086 # CMD's words
line=$("$bin" $cmd) || rc=$?
# No GPU here: the image's default command says so in one line, exit 77.
case $rc:$line in
77:SKIP:*) ;;
*) fail "the runtime stage's '$entry $cmd' exited $rc: $line" ;;
esac
echo "containerfile: runtime: $entry $cmd -> $line"
# shellcheck disable=SC2086 # CMD's words
line=$("$bin" $cmd --only memfd --size 1M) || fail "'$entry $cmd --only memfd' failed: $line"
echo "containerfile: runtime: $entry $cmd --only memfd --size 1M -> $line"
echo "containerfile: the build stage's $runs RUN ran in a Debian 11 root, its /out runs here"
