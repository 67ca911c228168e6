// dumplogits runs a token sequence through llama.cpp in one batch and
// writes the logits of every position as little-endian float32
// [positions][vocab]: the reference the engine's family tests compare
// against. F32 KV cache, flash attention off, one sequence.
//
// usage: dumplogits MODEL.gguf IDS OUT.f32 [threads]
//   IDS: token ids separated by commas
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level level, const char * text, void *) {
    if (level >= GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf IDS OUT.f32 [threads]\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> ids;
    for (const char * p = argv[2]; *p;) {
        char * end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            fprintf(stderr, "bad token list at %s\n", p);
            return 2;
        }
        ids.push_back((llama_token) v);
        p = *end == ',' ? end + 1 : end;
    }
    int threads = argc > 4 ? atoi(argv[4]) : 2;
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = ids.size() < 256 ? 256 : ids.size();
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.swa_full = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context\n");
        return 1;
    }
    llama_batch batch = llama_batch_init(ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); i++) {
        batch.token[i] = ids[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = ids.size();
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "decode failed\n");
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE * out = fopen(argv[3], "wb");
    if (!out) {
        fprintf(stderr, "cannot write %s\n", argv[3]);
        return 1;
    }
    for (size_t i = 0; i < ids.size(); i++) {
        fwrite(llama_get_logits_ith(ctx, i), sizeof(float), n_vocab, out);
    }
    fclose(out);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
