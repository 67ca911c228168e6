#!/bin/sh
# Makes the llama.cpp references of the family tests and of the embedded
# lesson models (engine/cpu/testdata/llamacpp): builds llama.cpp at COMMIT
# and dumplogits.cpp against it, then runs the tests that write every
# case's file, logits and tokens with that commit recorded (run it again
# after retraining a lesson model); and the tekken split's
# (engine/tokenizer/testdata/tekken.json) with its llama-tokenize.
#
#   tools/llamaref/make.sh /path/to/llama.cpp-checkout [COMMIT]
#
# The checkout is used as is when COMMIT is omitted (its HEAD is recorded).
# Needs cmake and a C++17 compiler; about 20 minutes on 2 cores the first
# time. Never copies llama.cpp code into this repository.
set -eu
src=${1:?usage: make.sh LLAMA_CPP_DIR [COMMIT]}
repo=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -ge 2 ]; then git -C "$src" checkout -q "$2"; fi
commit=$(git -C "$src" rev-parse --short=9 HEAD)
cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
	-DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF >/dev/null
cmake --build "$src/build" -j"$(nproc)" --target llama llama-tokenize >/dev/null
out=$(mktemp -d)/dumplogits
b="$src/build"
g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$repo/tools/llamaref/dumplogits.cpp" -o "$out" \
	"$b/src/libllama.a" "$b/ggml/src/libggml.a" "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" \
	-fopenmp -lpthread -ldl
cd "$repo"
rm -rf engine/cpu/testdata/llamacpp
go test ./engine/cpu -count=1 -run 'TestFamiliesMatchLlamaCpp|TestLessonModelsMatchLlamaCpp' -llamacpp-dump="$out" -llamacpp-commit="$commit" -v | grep -E '^(---|ok|FAIL)|positions'
go test ./engine/tokenizer -count=1 -run TestTekkenMatchesLlamaCpp -tekken-llama-tokenize="$src/build/bin/llama-tokenize" -tekken-llamacpp-commit="$commit" -v | grep -E '^(---|ok|FAIL)'
echo "references written with llama.cpp $commit"
