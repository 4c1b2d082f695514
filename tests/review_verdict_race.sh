#!/bin/sh
# tests/review_verdict_race.sh: a review's finding, under mpirun: rank 0
# gives its verdict and leaves at once (it lingers only for the ranks of its
# own node), and rank 1, of another node (GPUIPC_TEST_BOOT_ID), that looks a
# moment later finds rank 0's TCP listener refusing connections, takes rank 0
# for dead before reading the verdict it published, gives a second verdict
# of its own, and fails the run: "rank 0 is gone ... gives the run's
# verdict", "rank 0's results never came", exit 1. The moment is made here
# by delaying rank 1's TCP connects (an LD_PRELOAD shim) by 1.5 s, as a
# loaded node or a slow path would; the run should pass (every rank 77,
# SKIP, with memfd only) whatever the delay.
#
# Usage: sh tests/review_verdict_race.sh [program]. Exits 1 while the
# defect stands, 0 once fixed; skipped (0) without mpirun or cc.
prog=${1:-./gpuipc_test}
command -v mpirun >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 || {
    echo "SKIP: tests/review_verdict_race.sh: no mpirun or cc"; exit 0; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
cat >"$tmp/slow.c" <<'EOC'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    static int (*real)(int, const struct sockaddr *, socklen_t);
    const char *ms = getenv("SLOW_CONNECT_MS");

    if (real == NULL)
        real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    if (ms != NULL && sa != NULL && sa->sa_family == AF_INET)
        usleep((useconds_t)atoi(ms) * 1000);
    return real(fd, sa, len);
}
EOC
cc -shared -fPIC -o "$tmp/slow.so" "$tmp/slow.c" -ldl || exit 1
cat >"$tmp/rank" <<'EOR'
#!/bin/sh
"$@"
rc=$?
echo "EXIT $PMIX_RANK $rc"
exit $rc
EOR
chmod +x "$tmp/rank"
boot=0badb007000040008000feed0000beef
only="--only memfd,memfd-pidfd"
timeout 60 mpirun --allow-run-as-root --oversubscribe --mca orte_abort_on_non_zero_status 0 \
    -np 1 "$tmp/rank" "$prog" --ranks $only --ranks-net=lo : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot LD_PRELOAD="$tmp/slow.so" SLOW_CONNECT_MS=1500 \
        "$tmp/rank" "$prog" --ranks $only --ranks-net=lo >"$tmp/out" 2>&1
exits=$(sed -n 's/^EXIT \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$tmp/out" | sort -n | cut -d' ' -f2 | tr '\n' ' ')
if [ "$exits" = "77 77 " ] && ! grep -q 'rank 0 is gone' "$tmp/out"; then
    echo "PASS: review: rank 1 of another node, slow to look, takes rank 0's verdict"
    exit 0
fi
echo "FAIL: review: rank 1 of another node took rank 0 for dead after its verdict (exits '$exits'):"
sed 's/^/    /' "$tmp/out"
exit 1
