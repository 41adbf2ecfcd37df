#!/bin/sh
# check_man.sh PAGE... -- ALIAS...: every man page renders without a warning,
# and every alias page (".so man1/oshcc.1") leads to one of ours.
# man-db's `man -l --warnings` is what a user's man runs; groff -ww adds
# every other class of warning.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/man1"
status=0
pages=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    cp "$1" "$tmp/man1/" || exit 1
    pages="$pages $(basename "$1")"
    shift
done
[ $# -gt 0 ] && shift
aliases=
for a in "$@"; do
    cp "$a" "$tmp/man1/" || exit 1
    aliases="$aliases $(basename "$a")"
done
if [ -z "$pages" ]; then
    echo "no man page given"
    exit 1
fi
render() {
    if command -v man >/dev/null 2>&1; then
        (cd "$tmp" && MANWIDTH=80 man -l --warnings "man1/$1" 2>&1 >/dev/null)
    fi
    # every groff warning, not only man's default class (macros)
    if command -v groff >/dev/null 2>&1; then
        (cd "$tmp" && groff -man -ww -z -Tutf8 -k -s "man1/$1" 2>&1)
    elif ! command -v man >/dev/null 2>&1; then
        echo "neither man nor groff is installed (scripts/install-deps.sh installs man-db)"
    fi
}
for p in $pages $aliases; do
    warnings=$(render "$p")
    if [ -n "$warnings" ]; then
        echo "$p: warnings when rendered:"
        echo "$warnings"
        status=1
    fi
done
for a in $aliases; do
    target=$(sed -n 's/^\.so man1\///p' "$tmp/man1/$a")
    case " $pages " in
    *" $target "*) ;;
    *) echo "$a: points to '$target', which is not one of the pages ($pages )"; status=1 ;;
    esac
done
# The page a user sees must be ushmem's, not Open MPI's of the same name.
if command -v man >/dev/null 2>&1; then
    for p in $pages $aliases; do
        if ! (cd "$tmp" && MANWIDTH=80 man -l "man1/$p" 2>/dev/null | head -1 | grep -q 'ushmem manual'); then
            echo "$p: does not render as a page of the ushmem manual"
            status=1
        fi
    done
fi
[ $status -eq 0 ] && echo "man pages render without warnings:$pages$aliases"
exit $status
