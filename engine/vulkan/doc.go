// Package vulkan is the engine's GPU backend: compute shaders (GLSL in
// shaders/, compiled to SPIR-V by shaders/build.sh, committed and embedded)
// run every op of the families' forward passes (llama, gpt2, qwen2,
// qwen3, gemma2, gemma3, phi3) — matrix products and embedding lookups
// over F32, F16, Q8_0 and Q4_0 weights dequantized in the shader (other
// weight types are decoded to F32 once, at upload), RMSNorm (per row, per
// head for Q/K norms, after a sub-layer for post-norms), LayerNorm, RoPE
// (NORM and NEOX, linear and YaRN scaling, frequency factors, a base per
// layer kind), scaled
// attention scores with the causal mask and sliding windows, soft caps,
// softmax, the attention-weighted sum over the KV cache, SwiGLU, GeGLU,
// GELU, scales, adds, and KV-cache appends. A model with a feature the
// passes lack (model.Features not in supported) is refused at Load, and
// the engine runs it on the CPU with a note saying why.
//
// It drives Vulkan through github.com/vulkan-go/vulkan with its own small
// loader (dlopen of libvulkan.so.1, so a machine without Vulkan still runs
// the CPU path) and a C shim for what the 1.1.88 binding lacks
// (vkGetPhysicalDeviceProperties2 for the subgroup size and driver name,
// and a debug-utils messenger that counts validation errors).
//
// Weights are uploaded once (a layer's Q, K and V end to end in one buffer,
// and its gate and up); activations and the KV cache stay on the device; a
// forward pass is one command buffer and the logits are read back at the
// end. A decode step (or a chunk under 16 tokens) no hook watches takes the
// fused path (fused.go): six dispatches a llama layer instead of 19, matrix
// products reduced with subgroup adds, and a decode step recorded once per
// Runner and replayed with the position in a small buffer. Longer chunks
// multiply in 32 × 32 tiles through shared memory; hooks take the unfused
// path, which stops at every stage to read back what they watch. Devices
// whose memory is host-visible and device-local (CPU and integrated
// devices) keep buffers mapped; discrete GPUs get device-local buffers with
// staging copies (Options.ForceStaging tests that path anywhere). Without
// cgo the package only reports that it is absent.
//
// Every op is tested against the CPU backend (vulkan_test.go) by normalized
// mean squared error with llama.cpp's thresholds, with guard regions after
// each output, under the Khronos validation layer when installed.
package vulkan
