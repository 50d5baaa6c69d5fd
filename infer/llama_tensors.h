/*
 * llama_tensors.h - the tensors of a Llama-family GGUF model (llama, qwen2,
 * starcoder2, gemma),
 * written once: infer/model.c finds them by these names and `infill
 * mkmodel` (cli/cli_mkmodel.c) writes them, in this order, which is the
 * order llama.cpp's converter writes: the tensors before the blocks, each
 * block's ("blk.<layer>.<suffix>"), the tensors after the blocks.
 *
 * Each list is X(name, field, kind, ne0, ne1): field is the member of
 * struct backend_weights (whole-model lists) or struct backend_layer (the
 * block list) in kernels/backend.h that holds the tensor; ne0 (the input
 * size, contiguous) and ne1 (the output rows) name the model's sizes as
 * enum llama_dim suffixes, ne1 NONE for a vector. A header of tables only:
 * it includes nothing and declares no function.
 */
#ifndef INFILL_INFER_LLAMA_TENSORS_H
#define INFILL_INFER_LLAMA_TENSORS_H

enum llama_tensor_kind {
	LLAMA_TENSOR_REQUIRED, /* a file without it is refused */
	/* the Q/K/V biases: required where the family has them (qwen2,
	 * starcoder2), optional elsewhere */
	LLAMA_TENSOR_BIAS,
	/* the other biases (norms, attention output, FFN): required where the
	 * family has them (starcoder2), optional elsewhere */
	LLAMA_TENSOR_LN_BIAS,
	/* the FFN gate: required unless the family's FFN has none (starcoder2) */
	LLAMA_TENSOR_GATE,
	LLAMA_TENSOR_TIED, /* optional: when absent token_embd.weight is used (tied embeddings) */
};

/* The sizes ne0 and ne1 name: LLAMA_DIM_##ne0. */
enum llama_dim {
	LLAMA_DIM_NONE, /* ne1 of a vector */
	LLAMA_DIM_EMBD, /* n_embd */
	LLAMA_DIM_Q, /* n_head * head_dim (n_embd except where key_length says otherwise, gemma 7B) */
	LLAMA_DIM_KV,    /* n_head_kv * head_dim */
	LLAMA_DIM_FF,    /* n_ff, the feed-forward width */
	LLAMA_DIM_VOCAB, /* n_vocab */
};

/* Before the blocks. */
#define LLAMA_TENSORS_FIRST(X) X("token_embd.weight", tok_embd, LLAMA_TENSOR_REQUIRED, EMBD, VOCAB)

/* Each block's, "blk.<layer>." before the name. */
#define LLAMA_TENSORS_LAYER(X)                                              \
	X("attn_norm.weight", attn_norm, LLAMA_TENSOR_REQUIRED, EMBD, NONE) \
	X("attn_norm.bias", attn_norm_b, LLAMA_TENSOR_LN_BIAS, EMBD, NONE)  \
	X("attn_q.weight", wq, LLAMA_TENSOR_REQUIRED, EMBD, Q)              \
	X("attn_k.weight", wk, LLAMA_TENSOR_REQUIRED, EMBD, KV)             \
	X("attn_v.weight", wv, LLAMA_TENSOR_REQUIRED, EMBD, KV)             \
	X("attn_q.bias", bq, LLAMA_TENSOR_BIAS, Q, NONE)                    \
	X("attn_k.bias", bk, LLAMA_TENSOR_BIAS, KV, NONE)                   \
	X("attn_v.bias", bv, LLAMA_TENSOR_BIAS, KV, NONE)                   \
	X("attn_output.weight", wo, LLAMA_TENSOR_REQUIRED, Q, EMBD)         \
	X("attn_output.bias", bo, LLAMA_TENSOR_LN_BIAS, EMBD, NONE)         \
	X("ffn_norm.weight", ffn_norm, LLAMA_TENSOR_REQUIRED, EMBD, NONE)   \
	X("ffn_norm.bias", ffn_norm_b, LLAMA_TENSOR_LN_BIAS, EMBD, NONE)    \
	X("ffn_gate.weight", w_gate, LLAMA_TENSOR_GATE, EMBD, FF)           \
	X("ffn_up.weight", w_up, LLAMA_TENSOR_REQUIRED, EMBD, FF)           \
	X("ffn_up.bias", b_up, LLAMA_TENSOR_LN_BIAS, FF, NONE)              \
	X("ffn_down.weight", w_down, LLAMA_TENSOR_REQUIRED, FF, EMBD)       \
	X("ffn_down.bias", b_down, LLAMA_TENSOR_LN_BIAS, EMBD, NONE)

/* After the blocks. */
#define LLAMA_TENSORS_LAST(X)                                                   \
	X("output_norm.weight", output_norm, LLAMA_TENSOR_REQUIRED, EMBD, NONE) \
	X("output_norm.bias", output_norm_b, LLAMA_TENSOR_LN_BIAS, EMBD, NONE)  \
	X("output.weight", output, LLAMA_TENSOR_TIED, EMBD, VOCAB)

#endif
