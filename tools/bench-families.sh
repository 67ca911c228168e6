#!/bin/sh
# The families' speed beside llama.cpp at 2 threads (docs/perf-log.md, "The families' real shapes"):
# random-weight files in the exact shapes of SmolLM2-135M, Qwen2.5-0.5B,
# Qwen3-0.6B and gemma-3-270m (`synth --shape`), F16, Q8_0 and Q4_K_M,
# each measured by `stepthrough bench` and `llama-bench` in alternation,
# ROUNDS rounds, each run -r 3 after a warm-up.
#
#   tools/bench-families.sh LLAMA_BENCH [DIR] [ROUNDS]
set -eu
lb=${1:?usage: bench-families.sh path/to/llama-bench [DIR] [ROUNDS]}
dir=${2:-/tmp/families-bench}
rounds=${3:-2}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
(cd "$repo" && go build -o "$dir/stepthrough" .)
st="$dir/stepthrough"
shapes="smollm2-135m qwen2.5-0.5b qwen3-0.6b gemma3-270m"
for s in $shapes; do
	[ -f "$dir/$s-f16.gguf" ] || "$st" synth --shape "$s" --type f16 --out "$dir/$s-f16.gguf"
	for q in q8_0 q4_k_m; do
		[ -f "$dir/$s-$q.gguf" ] || "$st" quantize --model "$dir/$s-f16.gguf" --type "$q" --out "$dir/$s-$q.gguf" --quiet
	done
done
for r in $(seq "$rounds"); do
	for s in $shapes; do
		for q in f16 q8_0 q4_k_m; do
			f="$dir/$s-$q.gguf"
			"$st" bench --model "$f" -p 128 -n 64 -r 3 -t 2 --backend cpu | grep -E 'pp128|tg64' | sed "s/^/ours  round $r /"
			"$lb" -m "$f" -p 128 -n 64 -r 3 -t 2 | grep -E 'pp128|tg64' | sed "s/^/llama round $r $s-$q /"
		done
	done
done
