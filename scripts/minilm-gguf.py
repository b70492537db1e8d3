#!/usr/bin/env python3
"""Write all-MiniLM-L6-v2 (a BERT encoder) as a GGUF file that llama.cpp's llama-server serves.

Needs only numpy and the PyPI `gguf` package (llama.cpp's own converter needs torch):

    minilm-gguf.py MODEL_DIR OUT.gguf    # MODEL_DIR holds config.json, model.safetensors, vocab.txt

Matrices and the word embeddings are stored as f16; the position and token-type tables stay
f32 (llama.cpp adds them to the f32 word embeddings and aborts with `binary_op: unsupported
types` when they are f16), as do biases and layer norms.
"""
import json
import os
import struct
import sys

import gguf
import numpy as np


def safetensors(path):
    """name -> numpy array, read from the file's JSON header and raw little-endian data."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        out[name] = np.frombuffer(data[start:end], dtype=dtypes[t["dtype"]]).reshape(t["shape"])
    return out


def tensor_name(hf):
    """The GGUF name of a Hugging Face BERT tensor, or None for one llama.cpp does not use."""
    fixed = {
        "embeddings.word_embeddings.weight": "token_embd.weight",
        "embeddings.token_type_embeddings.weight": "token_types.weight",
        "embeddings.position_embeddings.weight": "position_embd.weight",
        "embeddings.LayerNorm.weight": "token_embd_norm.weight",
        "embeddings.LayerNorm.bias": "token_embd_norm.bias",
    }
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")
    if parts[0] != "encoder" or parts[1] != "layer":
        return None  # position_ids, the pooler
    rest = ".".join(parts[3:-1])
    kinds = {
        "attention.self.query": "attn_q",
        "attention.self.key": "attn_k",
        "attention.self.value": "attn_v",
        "attention.output.dense": "attn_output",
        "attention.output.LayerNorm": "attn_output_norm",
        "intermediate.dense": "ffn_up",
        "output.dense": "ffn_down",
        "output.LayerNorm": "layer_output_norm",
    }
    return f"blk.{parts[2]}.{kinds[rest]}.{parts[-1]}"


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    config = json.load(open(os.path.join(model_dir, "config.json")))
    vocab = open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8").read().splitlines()

    w = gguf.GGUFWriter(out + ".part", "bert")
    w.add_name("all-MiniLM-L6-v2")
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_block_count(config["num_hidden_layers"])
    w.add_head_count(config["num_attention_heads"])
    w.add_layer_norm_eps(config["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    # WordPiece vocabulary in llama.cpp's form: a word start carries U+2581, a continuation
    # (`##x`) is bare, special tokens ([CLS], [unused0], ...) stay as they are.
    def phantom(tok):
        if tok.startswith("[") and tok.endswith("]"):
            return tok
        return tok[2:] if tok.startswith("##") else "\u2581" + tok

    special = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    w.add_tokenizer_model("bert")
    w.add_token_list([phantom(t) for t in vocab])
    w.add_token_types([gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in vocab])
    w.add_token_type_count(config["type_vocab_size"])
    w.add_bos_token_id(vocab.index("[CLS]"))
    w.add_sep_token_id(vocab.index("[SEP]"))
    w.add_unk_token_id(vocab.index("[UNK]"))
    w.add_pad_token_id(vocab.index("[PAD]"))
    w.add_mask_token_id(vocab.index("[MASK]"))
    w.add_add_bos_token(True)
    w.add_add_sep_token(True)

    keep_f32 = {"token_types.weight", "position_embd.weight"}
    for hf, array in safetensors(os.path.join(model_dir, "model.safetensors")).items():
        name = tensor_name(hf)
        if name is None:
            continue
        array = array.astype(np.float32)
        if array.ndim == 2 and name not in keep_f32:
            array = array.astype(np.float16)
        w.add_tensor(name, array)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(out + ".part", out)
    print(f"wrote {out} ({os.path.getsize(out) // 1_000_000} MB)")


if __name__ == "__main__":
    main()
