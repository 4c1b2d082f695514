#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deploy/deps.sh install WHAT...: what the build and make check need, made
# present. WHAT is check (Check, the C unit-test library, with its static
# library: the program links it in), pkg-config, xmllint (make check holds
# the JUnit reports to it). The Makefile runs this where one is missing.
#
# As root it installs what is missing, saying what and how: apt-get update
# and install on Debian and Ubuntu, dnf (or yum) on RHEL-family systems and
# Fedora. Never through sudo: it can prompt, and CI has no terminal. As
# anyone else it installs nothing and says, in one line on standard output
# (the Makefile's error), exactly the command to run as root.
#
# Progress goes to standard error. Exit 0: all present (or installed);
# 1: the installation failed; 2: not root, or no package manager known.
set -u
[ "${1:-}" = install ] || { echo "usage: deploy/deps.sh install check|pkg-config|xmllint..." >&2; exit 2; }
shift
pkgconf=${PKG_CONFIG:-pkg-config}

# The package manager, and each need's package there.
if command -v apt-get >/dev/null; then
    pm=apt-get
elif command -v dnf >/dev/null; then
    pm=dnf
elif command -v yum >/dev/null; then
    pm=yum
else
    pm=
fi
package() {
    case $pm:$1 in
    apt-get:check) echo check ;;
    apt-get:pkg-config) echo pkg-config ;;
    apt-get:xmllint) echo libxml2-utils ;;
    *:check) echo check-devel check-static ;;
    *:pkg-config) echo pkgconf-pkg-config ;;
    *:xmllint) echo libxml2 ;;
    esac
}
present() {
    case $1 in
    # What the build asks of pkg-config: Check's flags.
    check) command -v "$pkgconf" >/dev/null && "$pkgconf" --cflags --libs check >/dev/null 2>&1 ;;
    pkg-config) command -v "$pkgconf" >/dev/null ;;
    xmllint) command -v xmllint >/dev/null ;;
    *) echo "deps: '$1' is not something this script knows" >&2; exit 2 ;;
    esac
}

missing= packages=
for need in "$@"; do
    present "$need" && continue
    case $need in check) label="Check (the C unit-test library)" ;; *) label=$need ;; esac
    missing="$missing${missing:+, }$label"
    packages="$packages${packages:+ }$(package "$need")"
done
[ -n "$missing" ] || exit 0

if [ -z "$pm" ]; then
    echo "missing: $missing; no apt-get, dnf or yum here: install Check (with its static" \
        "library), pkg-config and xmllint, then run make again"
    exit 2
fi
case $pm in
apt-get) command="apt-get update && apt-get install -y $packages" ;;
*) command="$pm install -y $packages" ;;
esac
if [ "$(id -u)" != 0 ]; then
    echo "missing: $missing; as root, run: $command (or run make as root: it installs them)"
    exit 2
fi

echo "deps: installing $packages with $pm (missing: $missing)" >&2
if [ "$pm" = apt-get ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            $packages >&2
else
    $pm install -y -q $packages >&2
fi
rc=$?
if [ $rc != 0 ]; then
    case $pm in
    apt-get) echo "missing: $missing; '$command' failed (exit $rc, said above)" ;;
    *) echo "missing: $missing; '$command' failed (exit $rc, said above): on RHEL, Rocky" \
        "and AlmaLinux check-devel and check-static come from EPEL (dnf install -y" \
        "epel-release, and on RHEL 9 the CodeReady Builder repository)" ;;
    esac
    exit 1
fi
for need in "$@"; do
    present "$need" || {
        echo "missing: $need, still, after '$command' (said above)"
        exit 1
    }
done
echo "deps: installed $packages" >&2
exit 0
