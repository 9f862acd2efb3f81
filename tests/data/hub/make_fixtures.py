#!/usr/bin/env python3
"""Writes the safetensors headers (and gpt-oss's shard index) of the Hub fixtures in this folder.

Only the first 8 + N bytes of each .safetensors file are written: the little-endian header length and the
JSON header, laid out as the safetensors crate writes them (tensors sorted by descending dtype, then by name;
offsets contiguous from 0; `__metadata__` {"format": "pt"}; compact JSON padded with spaces to 8 bytes).
The tensor data is absent: the page and the CLI only ever ask for these bytes. Tensor names, shapes and
dtypes follow each checkpoint's published layout (see README.md); run from anywhere:

    python3 tests/data/hub/make_fixtures.py

Independent of the Rust parser on purpose: the tests check one against the other.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# safetensors `Dtype` declaration order (its derived `Ord`) and bit widths (`Dtype::bitsize`).
ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
         "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
        "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
        "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}


def nbytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    return n * BITS[dtype] // 8


def header(tensors):
    """tensors: {name: (dtype, shape)} -> bytes of length + JSON header."""
    items = sorted(tensors.items(), key=lambda kv: (-ORDER.index(kv[1][0]), kv[0]))
    meta = {"__metadata__": {"format": "pt"}}
    at = 0
    for name, (dtype, shape) in items:
        n = nbytes(dtype, shape)
        meta[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(meta, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, at


def write(path, data):
    with open(os.path.join(HERE, path), "wb") as f:
        f.write(data)


def config(repo):
    with open(os.path.join(HERE, repo, "config.json")) as f:
        return json.load(f)


def llama(c, dtype="BF16"):
    """LlamaForCausalLM's state dict (transformers `models/llama/modeling_llama.py`)."""
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    t = {"model.embed_tokens.weight": (dtype, [v, h]), "model.norm.weight": (dtype, [h])}
    if not c.get("tie_word_embeddings"):
        t["lm_head.weight"] = (dtype, [v, h])
    for n in range(c["num_hidden_layers"]):
        p = f"model.layers.{n}."
        t[p + "input_layernorm.weight"] = (dtype, [h])
        t[p + "post_attention_layernorm.weight"] = (dtype, [h])
        for name, shape in [("self_attn.q_proj", [q, h]), ("self_attn.k_proj", [kv, h]),
                            ("self_attn.v_proj", [kv, h]), ("self_attn.o_proj", [h, q]),
                            ("mlp.gate_proj", [i, h]), ("mlp.up_proj", [i, h]), ("mlp.down_proj", [h, i])]:
            t[p + name + ".weight"] = (dtype, shape)
    return t


def bnb_int8(t):
    """bitsandbytes LLM.int8() serialization of the decoder's linear layers (transformers
    `integrations/bitsandbytes.py`, `Int8Params`): int8 `weight`, one fp32 absmax per row `SCB`, and a
    0-d uint8 `weight_format`; embeddings, LM head and norms stay 16-bit."""
    out = {}
    for name, (dtype, shape) in t.items():
        if ".layers." in name and name.endswith("_proj.weight"):
            out[name] = ("I8", shape)
            out[name[: -len("weight")] + "SCB"] = ("F32", [shape[0]])
            out[name + "_format"] = ("U8", [])
        else:
            out[name] = (dtype, shape)
    return out


def gpt_oss(c):
    """GptOssForCausalLM as published in MXFP4 (transformers `integrations/mxfp4.py`): expert weights as
    `*_blocks` (U8, 16 bytes = 32 E2M1 values per block) and `*_scales` (U8 E8M0, one per block); attention,
    router, sinks, biases, embeddings and norms in BF16."""
    h, i, v, e = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_local_experts"]
    hd = c["head_dim"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    layers = []
    for n in range(c["num_hidden_layers"]):
        p = f"model.layers.{n}."
        t = {
            p + "input_layernorm.weight": ("BF16", [h]),
            p + "post_attention_layernorm.weight": ("BF16", [h]),
            p + "self_attn.sinks": ("BF16", [c["num_attention_heads"]]),
            p + "mlp.router.weight": ("BF16", [e, h]),
            p + "mlp.router.bias": ("BF16", [e]),
            p + "mlp.experts.gate_up_proj_blocks": ("U8", [e, 2 * i, h // 32, 16]),
            p + "mlp.experts.gate_up_proj_scales": ("U8", [e, 2 * i, h // 32]),
            p + "mlp.experts.gate_up_proj_bias": ("BF16", [e, 2 * i]),
            p + "mlp.experts.down_proj_blocks": ("U8", [e, h, i // 32, 16]),
            p + "mlp.experts.down_proj_scales": ("U8", [e, h, i // 32]),
            p + "mlp.experts.down_proj_bias": ("BF16", [e, h]),
        }
        for name, shape in [("q_proj", [q, h]), ("k_proj", [kv, h]), ("v_proj", [kv, h]), ("o_proj", [h, q])]:
            t[p + f"self_attn.{name}.weight"] = ("BF16", shape)
            t[p + f"self_attn.{name}.bias"] = ("BF16", [shape[0]])
        layers.append(t)
    head = {"model.embed_tokens.weight": ("BF16", [v, h]), "lm_head.weight": ("BF16", [v, h]),
            "model.norm.weight": ("BF16", [h])}
    return layers, head


def main():
    # Llama 3.2 1B: one model.safetensors, BF16, tied embeddings (no lm_head tensor).
    c = config("meta-llama/Llama-3.2-1B")
    one, size = header(llama(c))
    write("meta-llama/Llama-3.2-1B/model.safetensors", one)
    print("Llama-3.2-1B", len(one), "header bytes,", size, "data bytes")

    # The same header, cut in half; and with a bogus length (2^40) in front of it.
    write("vramfit-test/truncated-header/model.safetensors", one[: len(one) // 2])
    write("vramfit-test/bogus-header-length/model.safetensors", struct.pack("<Q", 1 << 40) + one[8:])

    # Llama 3.1 8B in bitsandbytes 8-bit: the real index's weight map says which shard holds what.
    repo = "jeevanchaps/Meta-Llama3.1-8B-Instruct-assessment"
    c = config(repo)
    with open(os.path.join(HERE, repo, "model.safetensors.index.json")) as f:
        index = json.load(f)
    tensors = bnb_int8(llama(c, "F16"))
    assert set(tensors) == set(index["weight_map"]), set(tensors) ^ set(index["weight_map"])
    total = 0
    for shard in sorted(set(index["weight_map"].values())):
        part = {k: v for k, v in tensors.items() if index["weight_map"][k] == shard}
        data, size = header(part)
        write(f"{repo}/{shard}", data)
        total += size
        print(shard, len(data), "header bytes,", size, "data bytes")
    assert total == index["metadata"]["total_size"], (total, index["metadata"]["total_size"])

    # gpt-oss-20b: three shards (the split is ours), MXFP4 experts.
    repo = "openai/gpt-oss-20b"
    layers, head = gpt_oss(config(repo))
    shards = [dict(head)]
    for n, t in enumerate(layers):
        if n in (9, 18):
            shards.append({})
        shards[-1].update(t)
    weight_map, total = {}, 0
    for k, part in enumerate(shards):
        name = f"model-{k:05d}-of-{len(shards) - 1:05d}.safetensors"
        data, size = header(part)
        write(f"{repo}/{name}", data)
        total += size
        weight_map.update({t: name for t in part})
        print(name, len(data), "header bytes,", size, "data bytes")
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    write(f"{repo}/model.safetensors.index.json", (json.dumps(index, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
