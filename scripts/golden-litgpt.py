#!/usr/bin/env python3
"""golden-litgpt.py: the fake-tensor oracle for litgpt's LoRA fine-tuning, through litgpt's own model code.

litgpt does not run transformers' modeling files: its `GPT` (`litgpt/model.py`, LoRA variant `litgpt/lora.py`)
builds every family from one block, with a fused `qkv` linear whose LoRA adapts the enabled q/k/v slices
(`LoRAQKVLinear`), its own MLP classes and RoPE cache, and an LM head it calls in 128-token chunks during
fine-tuning. Every line of tests/data/golden-litgpt.jsonl is one training step of `litgpt/finetune/lora.py`
(`fit`: `model(input_ids, lm_head_chunk_size=128)`, the last chunk shifted, `chunked_cross_entropy`, backward,
`optimizer.step()`, `optimizer.zero_grad()`), counted by `fake_peak.py`'s memory oracle (imported as a module:
`MemOracle`, `_meta_to_fake`, the SDPA router). `tests/golden_litgpt.rs` compares vramfit's `peak_allocated`
(stack `litgpt`) with the oracle's peak.

Settings are those of litgpt's resource tables (`tutorials/resource-tables.md`): `--precision bf16-true`
(Lightning Fabric's `HalfPrecision` converts the whole module, LoRA factors included, to bf16: no autocast),
the LoRA defaults of `finetune/lora.py` (r 8, alpha 16, dropout 0.05, query and value only), AdamW
(`torch.optim.AdamW`, foreach as on CUDA), unpadded batches of the longest Alpaca example. Checkpointed jobs
wrap every `Block` in `torch.utils.checkpoint` (non-reentrant), as Fabric's FSDP strategy does with
`activation_checkpointing_policy={Block}`, on one GPU (no sharding).

Release: litgpt 0.5.13 (`pip install --no-deps litgpt lightning`; torch 2.15.0 as for fake_peak.py).
Not covered: bitsandbytes quantization (its kernels cannot run on fake tensors) and FSDP sharding.

Not part of CI (10-60 s a job on 2 cores). Run by hand, then commit the output:

    ../.venv-fake/bin/python scripts/golden-litgpt.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "golden-litgpt.jsonl")

# (litgpt config name, vramfit catalog id, longest Alpaca example in tokens: resource-tables.md notes)
MODELS = [
    ("phi-1_5", "phi-1-5", 1044),
    ("stablelm-base-alpha-3b", "stablelm-base-alpha-3b", 1034),
    ("Llama-2-7b-hf", "llama-2-7b-hf", 1304),
    ("falcon-7b", "falcon-7b", 1079),
]
SHAPES = [(1, False), (2, False), (4, False), (1, True), (4, True)]


def jobs():
    for name, catalog, seq in MODELS:
        for batch, ckpt in SHAPES:
            yield {
                "id": f"{catalog}/lora-b{batch}-{'ckpt' if ckpt else 'nockpt'}",
                "litgpt_config": name,
                "model": catalog,
                "batch_size": batch,
                "seq_len": seq,
                "gradient_checkpointing": ckpt,
                "lora": {"r": 8, "alpha": 16, "dropout": 0.05, "query": True, "key": False, "value": True,
                         "projection": False, "mlp": False, "head": False},
            }


def run(spec) -> dict:
    import fake_peak as fp
    import torch
    from litgpt.lora import GPT, Config, mark_only_lora_as_trainable
    from litgpt.model import Block
    from litgpt.utils import chunked_cross_entropy

    t0 = time.time()
    fp.setup_fake_gpu()
    fp.install_sdpa_router("sm80")
    fake_mode = fp._FakeMode()
    lo = spec["lora"]
    cfg = Config.from_name(spec["litgpt_config"], lora_r=lo["r"], lora_alpha=lo["alpha"],
                           lora_dropout=lo["dropout"], lora_query=lo["query"], lora_key=lo["key"],
                           lora_value=lo["value"], lora_projection=lo["projection"], lora_mlp=lo["mlp"],
                           lora_head=lo["head"])
    B, S = spec["batch_size"], spec["seq_len"]
    with torch.device("meta"):
        model = GPT(cfg)
        model.max_seq_length = S  # fit(): the longest example
    model = model.to(torch.bfloat16)  # Fabric bf16-true
    mark_only_lora_as_trainable(model)
    fp._meta_to_fake(model, fake_mode)
    if spec["gradient_checkpointing"]:
        from torch.utils.checkpoint import checkpoint

        for block in model.transformer.h:
            assert isinstance(block, Block)
            inner = block.forward
            block.forward = (lambda f: lambda *a, **k: checkpoint(f, *a, use_reentrant=False, **k))(inner)
    model.train()
    oracle = fp.MemOracle("sm80", False)
    for p in model.parameters():
        oracle.track(p, "params")
    for b in model.buffers():
        oracle.track(b, "buffers")
    trainable = [p for p in model.parameters() if p.requires_grad]
    hooks = list(oracle.install_module_hooks(model))
    for p in trainable:
        hooks.append(p.register_post_accumulate_grad_hook(lambda p: oracle.track(p.grad, "grads")))
    end_of_step = []
    try:
        with fake_mode, oracle:
            ids = torch.randint(0, cfg.padded_vocab_size, (B, S), device=fp.FAKE_DEV)
            targets = torch.randint(0, cfg.padded_vocab_size, (B, S), device=fp.FAKE_DEV)
            oracle.track(ids, "inputs")
            oracle.track(targets, "inputs")
            opt = torch.optim.AdamW(trainable, lr=3e-4, weight_decay=0.02, betas=(0.9, 0.95), foreach=True)
            for step in range(2):
                oracle.phase = f"forward.{step}"
                logits = model(ids, lm_head_chunk_size=128)
                logits[-1] = logits[-1][..., :-1, :]
                loss = chunked_cross_entropy(logits, targets[..., 1:])
                # finetune/lora.py keeps `logits` (the list of chunk outputs) bound through backward, the
                # optimizer step and the next forward, until `model(...)` returns and rebinds it.
                oracle.phase = f"backward.{step}"
                loss.backward()
                for p in trainable:
                    oracle.track(p.grad, "grads")
                oracle.phase = f"optimizer.{step}"
                opt.step()
                for st in opt.state.values():
                    for v in st.values():
                        oracle.track(v, "optimizer_states")
                oracle.phase = f"zero_grad.{step}"
                opt.zero_grad()
                end_of_step.append(oracle.total)
    finally:
        for h in hooks:
            h.remove()
    GiB = fp.GiB
    return {
        "peak_allocated_bytes": oracle.peak,
        "peak_allocated_gib": round(oracle.peak / GiB, 3),
        "peak_breakdown_bytes": oracle.peak_cat,
        "peak_at": oracle.peak_where,
        "phase_peaks_gib": {k: round(v / GiB, 3) for k, v in oracle.phase_peak.items()},
        "end_of_step_gib": [round(v / GiB, 3) for v in end_of_step],
        "params_total": sum(p.numel() for p in model.parameters()),
        "params_trainable": sum(p.numel() for p in trainable),
        "elapsed_s": round(time.time() - t0, 1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-peak", default=os.path.join(ROOT, "..", "shared", "tools", "fake-peak"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.fake_peak))
    import litgpt
    import torch

    done = set()
    if os.path.exists(OUT):
        done = {json.loads(l)["id"] for l in open(OUT) if l.strip()}
    for spec in jobs():
        if a.only not in spec["id"] or spec["id"] in done:
            continue
        rec = {**spec, "versions": {"litgpt": litgpt.__version__ if hasattr(litgpt, "__version__") else "0.5.13",
                                    "torch": torch.__version__}}
        try:
            rec.update(run(spec))
        except Exception as e:  # keep going; the record says what failed
            rec["error"] = f"{type(e).__name__}: {e}"
        print(rec["id"], rec.get("peak_allocated_gib", rec.get("error")), flush=True)
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
