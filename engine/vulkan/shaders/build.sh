#!/bin/sh
# Compiles every shader variant to SPIR-V (run by `go tool task shaders`;
# the .spv files are committed and embedded). Needs glslc.
set -eu
cd "$(dirname "$0")"
out=spv
mkdir -p "$out"
G="glslc -fshader-stage=compute --target-env=vulkan1.1 -O -I ."
for t in f32:0 f16:1 q8_0:8 q4_0:2 q4_1:3 q5_0:6 q5_1:7 q4_k:12 q5_k:13 q6_k:14; do
  name=${t%%:*}; id=${t##*:}
  $G -DWTYPE=$id matmul.comp -o "$out/matmul_$name.spv"
  $G -DWTYPE=$id matmul_tiled.comp -o "$out/matmult_$name.spv"
  $G -DWTYPE=$id -DFUSED -DNORM matmul.comp -o "$out/matmulf_norm_$name.spv"
  $G -DWTYPE=$id -DFUSED -DADD matmul.comp -o "$out/matmulf_add_$name.spv"
  $G -DWTYPE=$id -DFUSED -DNORM -DGATED matmul.comp -o "$out/matmulf_gated_$name.spv"
  $G -DWTYPE=$id -DFUSED -DGATED matmul.comp -o "$out/matmulf_gatedx_$name.spv"
  $G -DWTYPE=$id get_rows.comp -o "$out/get_rows_$name.spv"
done
$G -DQK=32 round_x.comp -o "$out/round_x32.spv"
$G -DQK=256 round_x.comp -o "$out/round_x256.spv"
$G -DQK=32 rmsnorm.comp -o "$out/rmsnorm_round32.spv"
$G -DQK=256 rmsnorm.comp -o "$out/rmsnorm_round256.spv"
for s in rmsnorm layernorm rope attn_scores softmax attn_out swiglu gelu geglu scale softcap add copy_rows qkv_post attn_fused edit; do
  $G $s.comp -o "$out/$s.spv"
done
