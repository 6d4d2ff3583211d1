#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy into a cache directory
# keyed by version, and reuses them when present. Prints the directory on stdout
# (suitable for KUBEBUILDER_ASSETS); all build chatter goes to stderr.
#
#   hack/kube-binaries.sh            # build if missing, print the directory
#   KUBE_CACHE_DIR=/x hack/kube-binaries.sh
#
# The wrapper module hack/kapi pins every dependency of both (go.sum is
# committed). It exists because `go install k8s.io/kubernetes/cmd/...@v` and
# `go install go.etcd.io/etcd/server/v3@v` fail on the replace directives in
# those modules' own go.mod files; it is one module for both so that what
# they share compiles once.
#
# Both are built without optimisation or inlining (-gcflags=all=-N -l): the
# compiler then does about a quarter less work (measured on client-go:
# 163 s of CPU against 213 s), and the e2e tests' load on an API server is a
# few dozen requests a second, far from what optimisation would matter for.
#
# Cold: about 15 CPU-minutes (2026-12-06: 11.2 min user + 3.8 min system CPU, both
# binaries; ~2.4 GB peak RSS). Warm Go build cache: seconds.
set -euo pipefail

KUBE_VERSION=v1.37.2
# etcd at the version of the client kube-apiserver links (hack/kapi/go.mod).
ETCD_VERSION=v3.7.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${KUBE_CACHE_DIR:-${HOME}/.cache/wasmprov/kube/${KUBE_VERSION}}
GO=${GO:-go}

mkdir -p "$DIR"
log() { echo "kube-binaries: $*" >&2; }

# One builder at a time per cache directory (parallel make targets, two shells).
exec 9>"$DIR/.lock"
flock 9

# fresh NAME WANT: the binary exists, its stamp says WANT, and it runs.
fresh() {
	[[ -x "$DIR/$1" && -f "$DIR/$1.version" && "$(cat "$DIR/$1.version")" == "$2" ]] &&
		"$DIR/$1" --version >/dev/null 2>&1
}

GCFLAGS='all=-N -l'

# build NAME WANT PKG LDFLAGS
build() {
	local name=$1 want="$2 gcflags=$GCFLAGS" pkg=$3 ldflags=$4 start tmp
	if fresh "$name" "$want"; then
		log "$name $2 cached in $DIR"
		return
	fi
	start=$(date +%s)
	log "building $name $2 (cold: minutes; warm Go cache: seconds)"
	tmp="$DIR/.$name.tmp.$$"
	# -mod=readonly: go.mod/go.sum are committed and must not drift.
	(cd "$ROOT/hack/kapi" && CGO_ENABLED=0 GOFLAGS=-mod=readonly "$GO" build -trimpath \
		-gcflags="$GCFLAGS" -ldflags "$ldflags" -o "$tmp" "$pkg")
	mv -f "$tmp" "$DIR/$name"
	echo "$want" >"$DIR/$name.version"
	log "built $name $2 in $(($(date +%s) - start))s"
}

KVER=${KUBE_VERSION#v}
KMAJOR=${KVER%%.*}
KMINOR=${KVER#*.}
KMINOR=${KMINOR%%.*}
vpkg=k8s.io/component-base/version
cpkg=k8s.io/client-go/pkg/version
kflags="-s -w"
for p in $vpkg $cpkg; do
	kflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$KMAJOR -X $p.gitMinor=$KMINOR"
	kflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

# etcd first: it is the smaller one, so a partial run still leaves something.
build etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "-s -w"
build kube-apiserver "$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-apiserver "$kflags"

echo "$DIR"
