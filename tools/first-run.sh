#!/usr/bin/env bash
# first-run.sh measures what the README promises a newcomer: a fresh clone,
# empty Go module and build caches and an empty npm cache, then the
# README's run command (npm ci --prefix static --omit=dev … && go run . serve), timed until the app answers on its address.
#   bash tools/first-run.sh [REPO]   (REPO defaults to this checkout)
# It prints the seconds to the first answer and stops the server. It
# uses throwaway caches under a temporary directory (deleted at the end),
# so it never touches yours.
set -euo pipefail
repo=${1:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}
tmp=$(mktemp -d)
port=${PORT:-18080}
if curl -fs -o /dev/null "http://127.0.0.1:$port/"; then
	echo "first-run: something already answers on port $port; set PORT to a free one" >&2
	exit 1
fi
cleanup() {
	[ -n "${pid:-}" ] && kill -- -"$pid" 2>/dev/null || true
	chmod -R u+w "$tmp" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
git clone -q "$repo" "$tmp/clone"
export GOMODCACHE=$tmp/gomod GOCACHE=$tmp/gocache npm_config_cache=$tmp/npm
start=$(date +%s.%N)
cd "$tmp/clone"
set -m
{ npm ci --prefix static --omit=dev --no-audit --no-fund && go run . serve --addr "127.0.0.1:$port"; } >"$tmp/run.log" 2>&1 &
pid=$!
set +m
until curl -fs -o /dev/null "http://127.0.0.1:$port/"; do
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$tmp/run.log" >&2
		echo "first-run: the app stopped before answering" >&2
		exit 1
	fi
	sleep 0.5
done
end=$(date +%s.%N)
printf 'first run (fresh clone, empty caches) answered in %.0f s on %s (%s cores)\n' \
	"$(echo "$end - $start" | bc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" "$(nproc)"
