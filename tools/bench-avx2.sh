#!/bin/sh
# The AVX2 table of BENCHMARKS.md: Stepthrough with its kernels capped at
# AVX2 (STEPTHROUGH_CPU=avx2) beside llama.cpp built for AVX2 only
# (-DGGML_NATIVE=OFF -DGGML_AVX2=ON, no AVX-512), 2 threads, on the bench
# shapes (the files `go tool task bench-models` writes): pp128 and tg64
# (`bench -r 3` against `llama-bench -r 3`), and 8 sequences against 1
# (`bench --batch 1,8 -p 32 -n 32` against `llama-batched-bench -npl 1,8`).
# Each pair starts only after 3 s in which the CPUs were at least 85 %
# idle (a shared machine), which engine goes first alternates by round,
# and the idle share right after the pair is printed with it.
#
#   tools/bench-avx2.sh LLAMA_BIN_DIR [DIR] [ROUNDS]
#
# On a CPU without AVX-512 (a Zen 2/3 EPYC or laptop) the cap changes
# nothing, and llama.cpp's default build there (-march=native) is the one
# to compare with: BENCHMARKS.md's "A CPU without AVX-512, measured on one".
#
# FILES (paths, space-separated) replaces the suite for pp128 and tg64,
# TESTS (semicolon-separated) those two tests, for example "-p 0 -n 32 -d
# 2048" for generation at a depth of 2048 positions (both programs' -d),
# and BATCH (paths, or "none") the three files of the 8-sequence rounds:
# for example the Qwen3-0.6B shape, `stepthrough synth --shape qwen3-0.6b
# --type f32` and the files quantized from it.
set -eu
lb=${1:?usage: bench-avx2.sh path/to/llama.cpp/build/bin [DIR] [ROUNDS]}
rounds=${3:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "${2:-$repo/.bench}"
dir=$(cd "${2:-$repo/.bench}" && pwd)
(cd "$repo" && go build -o "$dir/stepthrough" . && BENCHDIR="$dir" go tool task bench-models)
st="$dir/stepthrough"

# idle prints the CPUs' idle share over 3 s.
idle() {
	a=$(head -1 /proc/stat)
	sleep 3
	b=$(head -1 /proc/stat)
	echo "$a
$b" | awk '{t=0; for (i=2; i<=NF; i++) t+=$i; tot[NR]=t; id[NR]=$5+$6} END {printf "%.2f", (id[2]-id[1])/(tot[2]-tot[1])}'
}
quiet() { while [ "$(idle | awk '{print ($1 >= 0.85)}')" != 1 ]; do sleep 15; done; }

ours() { STEPTHROUGH_CPU=avx2 "$st" bench --model "$1" $2 -r 3 -t 2 | grep -E '\| (pp|tg)[0-9]' | sed "s/^/ours  /"; }
llama() { "$lb/llama-bench" -m "$1" $2 -t 2 -r 3 | grep -E ' (pp|tg)[0-9]' | sed "s/^/llama /"; }
oursb() { STEPTHROUGH_CPU=avx2 "$st" bench --model "$1" --batch 1,8 -p 32 -n 32 -r 2 -t 2 | grep -E '^\| +[18] ' | sed "s/^/ours  /"; }
llamab() { "$lb/llama-batched-bench" -m "$1" -c 1024 -b 512 -ub 512 -npp 32 -ntg 32 -npl 1,8 -t 2 | grep -E '^\| +32 \| +32 \|' | sed "s/^/llama /"; }

# suite names the bench files of the given shapes.
suite() { for m in "$@"; do echo "$dir/suite-$m.gguf"; done; }

tests=${TESTS:-"-p 128 -n 0;-p 0 -n 64"}
for r in $(seq "$rounds"); do
	IFS=';'
	set -- $tests
	unset IFS
	for t in "$@"; do
		for f in ${FILES:-$(suite 15M-f32 15M-q8_0 110M-f32 110M-q8_0 110M-q4_k_m)}; do
			m=$(basename "$f" .gguf)
			quiet
			echo "round $r $m $t"
			if [ $((r % 2)) = 1 ]; then ours "$f" "$t"; llama "$f" "$t"; else llama "$f" "$t"; ours "$f" "$t"; fi
			echo "idle after: $(idle)"
		done
	done
	[ "${BATCH:-}" = none ] && continue
	for f in ${BATCH:-$(suite 110M-q8_0 110M-q4_k_m 15M-q8_0)}; do
		m=$(basename "$f" .gguf)
		quiet
		echo "round $r $m batch 1,8"
		if [ $((r % 2)) = 1 ]; then oursb "$f"; llamab "$f"; else llamab "$f"; oursb "$f"; fi
		echo "idle after: $(idle)"
	done
done
