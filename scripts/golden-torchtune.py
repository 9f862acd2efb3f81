#!/usr/bin/env python3
"""golden-torchtune.py: the fake-tensor oracle for torchtune's single-device recipes, through torchtune's own code.

torchtune does not run transformers' modeling files: its models are `TransformerDecoder`s built by
`torchtune/models/<family>/_model_builders.py`, with separate q/k/v/output projections, `LoRALinear` adapters
held in the model dtype, K/V expanded to every query head before SDPA (`torchtune/modules/attention.py`), and an
output projection that returns the logits in chunks for `CEWithChunkedOutputLoss`. Every line of
tests/data/golden-torchtune.jsonl is two training steps of `recipes/lora_finetune_single_device.py` or
`recipes/full_finetune_single_device.py` as torchtune 0.6.1 ships them (`_loss_step`: the model called on the
tokens, labels shifted by `torch.hstack` with the ignore cache, `CEWithChunkedOutputLoss`, `del logits`; then
`loss * num_tokens`, backward, `scale_grads`, `optimizer.step()`, `zero_grad(set_to_none=True)`), counted by
`fake_peak.py`'s memory oracle (imported as a module: `MemOracle`, `_meta_to_fake`, the SDPA router).
`tests/golden_torchtune.rs` compares vramfit's `peak_allocated` (stack `torchtune`) with the oracle's peak.

Settings are each recipe config's own (`recipes/configs/<family>/*_single_device.yaml`): `dtype: bf16` (the
model, LoRA factors included, built under `training.set_default_dtype(bf16)`: no autocast), the config's LoRA
rank, alpha and modules (`q_proj`, `v_proj`, `output_proj` and the MLP), `torch.optim.AdamW(fused=True)` for
LoRA, 8 output chunks, and activation checkpointing as `training.set_activation_checkpointing` applies it
(`checkpoint_wrapper` around every `TransformerSelfAttentionLayer`), on and off. Full fine-tuning uses
`torch.optim.AdamW` (the configs' bitsandbytes optimizers need CUDA kernels that fake tensors cannot run), once
stepped after backward (foreach, PyTorch's CUDA default) and once inside backward (`optimizer_in_bwd: True`:
`training.register_optim_in_bwd_hooks`, one optimizer per parameter stepped and zeroed as its gradient lands).

Release: torchtune 0.6.1 (`pip install --no-deps torchtune==0.6.1 torchao==0.10.0` plus `datasets sentencepiece
tiktoken blobfile omegaconf psutil Pillow kagglehub`; torch 2.15.0 as for fake_peak.py). torchtune 0.6.1 needs
torchao's `nf4tensor`, which torchao ≥ 0.16 no longer has, while PEFT 0.21 refuses a torchao older than 0.16:
install torchao for this script only (or in a virtualenv of its own) and uninstall it before the PEFT grids.
Not covered: QLoRA (torchao's NF4 kernels), activation offloading (CUDA streams), `compile`.

Not part of CI (10-90 s a job on 2 cores). Run by hand, then commit the output:

    ../.venv-fake/bin/python scripts/golden-torchtune.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("GOLDEN_TORCHTUNE_OUT", os.path.join(ROOT, "tests", "data", "golden-torchtune.jsonl"))

# (recipe config of the LoRA recipe, full-model builder, vramfit catalog id)
MODELS = [
    ("llama3_2/1B_lora_single_device", "torchtune.models.llama3_2.llama3_2_1b", "llama-3.2-1b"),
    ("llama3_1/8B_lora_single_device", "torchtune.models.llama3_1.llama3_1_8b", "llama-3.1-8b"),
    ("llama2/7B_lora_single_device", "torchtune.models.llama2.llama2_7b", "llama-2-7b-hf"),
    ("qwen2_5/0.5B_lora_single_device", "torchtune.models.qwen2_5.qwen2_5_0_5b", "qwen2.5-0.5b"),
    ("qwen2_5/7B_lora_single_device", "torchtune.models.qwen2_5.qwen2_5_7b_instruct", "qwen2.5-7b"),
    ("gemma2/2B_lora_single_device", "torchtune.models.gemma2.gemma2_2b", "gemma-2-2b"),
    ("phi3/mini_lora_single_device", "torchtune.models.phi3.phi3_mini", "phi-3-mini-4k-instruct"),
]
# (mode, batch, sequence, checkpointing, optimizer)
SHAPES = [
    ("lora", 2, 2048, True, "adamw_fused"),
    ("lora", 2, 2048, False, "adamw_fused"),
    ("lora", 4, 4096, True, "adamw_fused"),
    ("full", 2, 2048, True, "adamw"),
    ("full", 2, 2048, True, "adamw_in_bwd"),
]
BIG = {"llama-3.1-8b", "llama-2-7b-hf", "qwen2.5-7b"}


def jobs():
    for recipe, full_builder, catalog in MODELS:
        for mode, batch, seq, ckpt, opt in SHAPES:
            if mode == "lora" and not ckpt and catalog in BIG and batch * seq > 4096:
                continue
            tag = f"{mode}-b{batch}-s{seq}-{'ckpt' if ckpt else 'nockpt'}" + ("-inbwd" if opt == "adamw_in_bwd" else "")
            yield {
                "id": f"{catalog}/{tag}",
                "recipe": recipe,
                "full_builder": full_builder,
                "model": catalog,
                "mode": mode,
                "batch_size": batch,
                "seq_len": seq,
                "gradient_checkpointing": ckpt,
                "optimizer": opt,
            }


def _component(path):
    import importlib

    mod, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(mod), name)


def _recipe_config(recipe):
    import importlib.util

    from omegaconf import OmegaConf

    # The wheel ships the recipes' configs beside torchtune (site-packages/recipes/configs), not as a package.
    site = os.path.dirname(os.path.dirname(importlib.util.find_spec("torchtune").origin))
    path = os.path.join(site, "recipes", "configs", recipe + ".yaml")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=False)


def run(spec) -> dict:
    import fake_peak as fp
    import torch
    from torchtune import modules, training
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    from torchtune.modules.peft import get_adapter_params, set_trainable_params

    t0 = time.time()
    fp.setup_fake_gpu()
    fp.install_sdpa_router("sm80")
    fake_mode = fp._FakeMode()
    cfg = _recipe_config(spec["recipe"])
    model_cfg = dict(cfg["model"])
    lora = spec["mode"] == "lora"
    with training.set_default_dtype(torch.bfloat16), torch.device("meta"):
        if lora:
            builder = _component(model_cfg.pop("_component_"))
            model = builder(**model_cfg)
        else:
            model = _component(spec["full_builder"])()
    if lora:
        adapter = get_adapter_params(model)
        set_trainable_params(model, adapter)
    if spec["gradient_checkpointing"]:
        training.set_activation_checkpointing(model, auto_wrap_policy={modules.TransformerSelfAttentionLayer})
    loss_fn = CEWithChunkedOutputLoss()
    model.set_num_output_chunks(loss_fn.num_output_chunks)
    # Built on the meta device, the RoPE modules skip their cache (`rope_init` returns early on meta); the recipes
    # build it on the GPU. Built here on the CPU (a few MiB), it then becomes a fake device buffer like the rest.
    for m in model.modules():
        if hasattr(m, "rope_init"):
            m.rope_init()
    fp._meta_to_fake(model, fake_mode)
    model.train()
    oracle = fp.MemOracle("sm80", False)
    for p in model.parameters():
        oracle.track(p, "params")
    for b in model.buffers():
        oracle.track(b, "buffers")
    trainable = [p for p in model.parameters() if p.requires_grad]
    hooks = list(oracle.install_module_hooks(model))
    end_of_step = []
    B, S = spec["batch_size"], spec["seq_len"]
    vocab = model.output.out_features if hasattr(model.output, "out_features") else model.tok_embeddings.num_embeddings
    try:
        with fake_mode, oracle:
            tokens = torch.randint(0, vocab, (B, S), device=fp.FAKE_DEV)
            labels_in = torch.randint(0, vocab, (B, S), device=fp.FAKE_DEV)
            ignore_cache = torch.full((B, 1), loss_fn.ignore_index, device=fp.FAKE_DEV)
            for t in (tokens, labels_in, ignore_cache):
                oracle.track(t, "inputs")
            in_bwd = spec["optimizer"] == "adamw_in_bwd"
            if in_bwd:
                optim = {p: torch.optim.AdamW([p], lr=2e-5, foreach=False) for p in trainable}
                training.register_optim_in_bwd_hooks(model, optim)
                opt = None
            elif spec["optimizer"] == "adamw_fused":
                opt = torch.optim.AdamW(trainable, lr=3e-4, weight_decay=0.01, fused=True)
            else:
                opt = torch.optim.AdamW(trainable, lr=2e-5, foreach=True)
            for step in range(2):
                oracle.phase = f"forward.{step}"
                logits = model(tokens)
                labels = torch.hstack((labels_in[..., 1:], ignore_cache[:B]))
                loss = loss_fn(logits, labels)
                del logits
                num_tokens = (labels != loss_fn.ignore_index).sum()
                current_loss = loss * num_tokens
                del loss
                oracle.phase = f"backward.{step}"
                current_loss.backward()
                if opt is not None:
                    for p in trainable:
                        oracle.track(p.grad, "grads")
                    training.scale_grads(model, 1 / num_tokens)
                    oracle.phase = f"optimizer.{step}"
                    opt.step()
                    for st in opt.state.values():
                        for v in st.values():
                            oracle.track(v, "optimizer_states")
                    oracle.phase = f"zero_grad.{step}"
                    opt.zero_grad(set_to_none=True)
                else:
                    for o in optim.values():
                        for st in o.state.values():
                            for v in st.values():
                                oracle.track(v, "optimizer_states")
                del current_loss
                end_of_step.append(oracle.total)
    finally:
        for h in hooks:
            h.remove()
    GiB = fp.GiB
    return {
        "lora": {k: model_cfg.get(k) for k in ("lora_attn_modules", "apply_lora_to_mlp", "apply_lora_to_output",
                                                 "lora_rank", "lora_alpha", "lora_dropout")} if lora else None,
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
    ap.add_argument("--shard", default="0/1", help="i/n: run every n-th job starting at i")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.fake_peak))
    import torch
    import torchtune

    shard, shards = (int(x) for x in a.shard.split("/"))
    done = set()
    if os.path.exists(OUT):
        done = {json.loads(l)["id"] for l in open(OUT) if l.strip()}
    for i, spec in enumerate(jobs()):
        if i % shards != shard or a.only not in spec["id"] or spec["id"] in done:
            continue
        rec = {**spec, "versions": {"torchtune": torchtune.__version__, "torch": torch.__version__}}
        try:
            rec.update(run(spec))
        except Exception as e:  # keep going; the record says what failed
            rec["error"] = f"{type(e).__name__}: {e}"
        print(rec["id"], rec.get("peak_allocated_gib", rec.get("error")), flush=True)
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
