/* For bench/cpu-vs-llamacpp.sh, compiled there against the libllama of npm's
 * @node-llama-cpp/linux-x64 and the llama.h of its source: loads a GGUF, feeds
 * the prompt ids in one batch, decodes greedily one token at a time, and
 * prints what the script compares with meshinfer's run.
 * Usage: llamacpp_driver BACKENDS_DIR MODEL.gguf THREADS N_GEN ID...
 * Prints: load_s prefill_tok_s decode_tok_s, then the generated ids. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "llama.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static llama_token argmax(const float* logits, int n) {
  int best = 0; /* the first of equals: the lowest id, as meshinfer picks */
  for (int i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

static void quiet(enum ggml_log_level level, const char* text, void* data) {
  (void)data;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: llamacpp_driver BACKENDS_DIR MODEL.gguf THREADS N_GEN ID...\n");
    return 2;
  }
  const double start = now_s();
  const int threads = atoi(argv[3]), n_gen = atoi(argv[4]), n_prompt = argc - 5;
  llama_token* prompt = malloc(sizeof(llama_token) * (size_t)n_prompt);
  llama_token* out = malloc(sizeof(llama_token) * (size_t)n_gen);
  for (int i = 0; i < n_prompt; ++i) prompt[i] = atoi(argv[5 + i]);
  llama_log_set(quiet, NULL);
  ggml_backend_load_all_from_path(argv[1]);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  struct llama_model* model = llama_model_load_from_file(argv[2], mp);
  if (!model) return fprintf(stderr, "cannot load %s\n", argv[2]), 1;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = (uint32_t)(n_prompt + n_gen + 16);
  cp.n_batch = cp.n_ubatch = (uint32_t)(n_prompt > 512 ? n_prompt : 512);
  cp.n_threads = cp.n_threads_batch = threads;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return fprintf(stderr, "cannot make a context\n"), 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  const double loaded = now_s();
  if (llama_decode(ctx, llama_batch_get_one(prompt, n_prompt))) return fprintf(stderr, "prefill failed\n"), 1;
  out[0] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
  const double prefilled = now_s();
  for (int i = 1; i < n_gen; ++i) {
    if (llama_decode(ctx, llama_batch_get_one(&out[i - 1], 1))) return fprintf(stderr, "decode failed\n"), 1;
    out[i] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
  }
  const double done = now_s();
  printf("%.6f %.3f %.3f\n", loaded - start, n_prompt / (prefilled - loaded),
         n_gen > 1 ? (n_gen - 1) / (done - prefilled) : 0.0);
  for (int i = 0; i < n_gen; ++i) printf("%d ", out[i]);
  printf("\n");
  llama_free(ctx);
  llama_model_free(model);
  free(prompt);
  free(out);
  return 0;
}
