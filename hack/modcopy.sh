#!/usr/bin/env bash
# modcopy.sh MODULE VERSION DEST ADD [REMOVE...]
#
# Makes DEST a writable copy of the Go module MODULE at VERSION (from Go's
# module cache, downloaded there first), without the paths REMOVE
# (relative to the module's root; globs allowed), with the tree ADD copied
# over it, but for ADD's *.patch files: those are applied to DEST
# (`patch -p1`, in name order) instead. bundle/traefik/go.mod replaces
# traefik and some of its dependencies with such copies: see there.
# Idempotent: DEST is made anew each time.
set -euo pipefail
module=$1 version=$2 dest=$3 add=$4
shift 4
go=${GO:-go}
(cd / && "$go" mod download "$module@$version")
# The module cache spells upper-case letters as '!' and the lower case one.
escaped=$(printf '%s' "$module" | sed 's/[A-Z]/!\L&/g')
src="$("$go" env GOMODCACHE)/$escaped@$version"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
cp -R "$src" "$dest"
chmod -R u+w "$dest"
for r in "$@"; do
	# shellcheck disable=SC2086 # REMOVE may be a glob
	rm -rf "$dest"/$r
done
dest=$(realpath "$dest")
(cd "$add" && find . -type f ! -name '*.patch' -print0 | xargs -0r cp --parents -t "$dest")
find "$add" -maxdepth 1 -name '*.patch' -print0 | sort -z | while IFS= read -r -d '' p; do
	patch -s -p1 -d "$dest" <"$p"
done
