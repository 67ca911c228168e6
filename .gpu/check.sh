#!/bin/sh
# The device check of the performance issue: one short run on a GPU machine
# that builds, runs the Vulkan op suite and model parity under validation,
# measures the fused decode path against the unfused one (dispatches a
# token, time a token), then the Vulkan backend beside the CPU backend on
# the same host (all cores and 2 threads: more threads must not decode
# slower) for the 15M and 110M shapes (F32; Q8_0) and a 1B-parameter shape
# (Q8_0), and prints one table. About 5 minutes on a GPU host; the model
# files are synthesized into $BENCHDIR once.
#
#   sh .gpu/check.sh build      # here: build .gpu/bin (carry it to a host without Go)
#   sh .gpu/check.sh            # the full check (builds first where Go is installed)
#   QUICK=1 sh .gpu/check.sh    # the 15M shape only, a few tokens (to try the script on lavapipe)
#
# A GPU host without Go runs the binaries `build` left in .gpu/bin (the
# device tool's `carry: [".gpu/bin"]`); it needs a Vulkan loader
# (libvulkan1) and the GPU's driver.
set -eu
cd "$(dirname "$0")/.."
B=${BENCHDIR:-.bench}
T=${THREADS:-$(nproc)}
if [ "${1:-}" = build ]; then
	mkdir -p .gpu/bin
	go build -ldflags='-s -w' -o .gpu/bin/stepthrough .
	go test -c -o .gpu/bin/vulkan.test ./engine/vulkan
	echo "built .gpu/bin: carry it to the GPU host"
	exit 0
fi
mkdir -p "$B"
if command -v go >/dev/null 2>&1; then
	echo "== build"
	BIN=${TMPDIR:-/tmp}/stepthrough-gpu-check
	VKTEST=${TMPDIR:-/tmp}/stepthrough-vulkan.test
	go build -o "$BIN" .
	go test -c -o "$VKTEST" ./engine/vulkan
else
	BIN=$PWD/.gpu/bin/stepthrough VKTEST=$PWD/.gpu/bin/vulkan.test
	[ -x "$BIN" ] && [ -x "$VKTEST" ] || { echo "no Go here and no .gpu/bin: run 'sh .gpu/check.sh build' where Go is, and carry .gpu/bin" >&2; exit 2; }
fi
synth() { # name, then synth flags
	f="$B/$1.gguf"
	shift
	[ -f "$f" ] || "$BIN" synth --arch llama --ctx 1024 "$@" --out "$f" >/dev/null
}
synth suite-15M-f32 --embd 288 --layers 6 --heads 6 --ffn 768 --vocab 32000 --type f32
if [ -n "${QUICK:-}" ]; then
	MODELS="suite-15M-f32"
	P=32 N=4 R=1
else
	synth suite-110M-f32 --embd 768 --layers 12 --heads 12 --ffn 2048 --vocab 32000 --type f32 --seed 1
	synth suite-110M-q8_0 --embd 768 --layers 12 --heads 12 --ffn 2048 --vocab 32000 --type q8_0 --seed 1
	synth shape-1B-q8_0 --embd 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --type q8_0 --seed 4
	MODELS="suite-15M-f32 suite-110M-f32 suite-110M-q8_0 shape-1B-q8_0"
	P=512 N=64 R=3
fi

echo "== Vulkan op suite and parity (validation on where the layer is installed)"
(cd engine/vulkan && REQUIRE_VULKAN=1 "$VKTEST" -test.count=1 -test.run 'TestOps|Parity|Hooks|Fused' 2>&1 | tail -3)

echo "== fused decode against unfused, tiled prompt products against a row per workgroup (stories15M shape)"
(cd engine/vulkan && REQUIRE_VULKAN=1 "$VKTEST" -test.run '^$' -test.bench 'DecodeVulkan|PrefillVulkan' -test.benchtime 5x 2>&1 | grep Benchmark) || true

# field NAME of a bench --json line
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p"; }
bench() {
	m=$1
	shift
	"$BIN" bench --model "$B/$m.gguf" -p "$P" -n "$N" -r "$R" --json "$@" 2>/dev/null | tail -1
}

echo "== Vulkan beside the CPU, pp$P and tg$N tokens/s (host: $T cores)"
echo "| model | file MiB | Vulkan pp | Vulkan tg | CPU $T thr pp | CPU $T thr tg | CPU 2 thr tg | CPU tg $T÷2 thr | Vulkan÷CPU pp | Vulkan÷CPU tg | Vulkan tg × file (GB/s) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in $MODELS; do
	size=$(stat -c %s "$B/$m.gguf")
	vk=$(bench "$m" --backend vulkan)
	c=$(bench "$m" --backend cpu -t "$T")
	c2=$(bench "$m" --backend cpu -t 2)
	vp=$(echo "$vk" | field pp_tps); vt=$(echo "$vk" | field tg_tps)
	cp=$(echo "$c" | field pp_tps); ct=$(echo "$c" | field tg_tps); c2t=$(echo "$c2" | field tg_tps)
	awk -v m="$m" -v s="$size" -v vp="$vp" -v vt="$vt" -v cp="$cp" -v ct="$ct" -v c2t="$c2t" 'BEGIN {
		printf "| %s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f× | %.2f× | %.2f× | %.1f |\n", m, s/1048576, vp, vt, cp, ct, c2t, ct/c2t, vp/cp, vt/ct, vt*s/1e9 }'
done
"$BIN" bench --model "$B/suite-15M-f32.gguf" -p 1 -n 1 -r 1 --backend vulkan --json 2>/dev/null | sed -n 's/.*"device":"\([^"]*\)".*/device: \1/p'
