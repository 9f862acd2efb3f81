//! Properties of the memory model: monotone in the knobs that should move it, finite for any input.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use vramfit::model::*;

fn job_strategy() -> impl Strategy<Value = Job> {
    let catalog: Vec<Architecture> = vramfit::catalog::models()
        .iter()
        .map(|m| m.arch().clone())
        .collect();
    let shape = (
        prop::sample::select(catalog),
        prop::sample::select(vec![Mode::Full, Mode::Lora, Mode::Qlora, Mode::Freeze]),
        1u32..16,
        1u32..8192,
        1u32..128,
        prop::sample::select(vec![
            AttentionImpl::Eager,
            AttentionImpl::Sdpa,
            AttentionImpl::Flash2,
        ]),
        prop::sample::select(vec![Checkpointing::Off, Checkpointing::Layer]),
        prop::sample::select(vec![Precision::Pure16, Precision::Mixed]),
        any::<bool>(),
    );
    let spread = (
        prop::sample::select(vec![1u32, 1, 2, 4, 8, 64]),
        prop::sample::select(vec![
            Parallelism::Ddp,
            Parallelism::Zero1,
            Parallelism::Zero2,
            Parallelism::Zero3,
            Parallelism::Pipeline,
            Parallelism::Tensor,
        ]),
        prop::sample::select(vec![
            Offload::None,
            Offload::Optimizer,
            Offload::ParamOptimizer,
        ]),
        0u32..4,
        prop::sample::select(vec![
            LossImpl::Fp32Logits,
            LossImpl::Chunked,
            LossImpl::Fused,
        ]),
        prop::sample::select(vec![
            Optimizer::Adamw,
            Optimizer::Adamw8bit,
            Optimizer::PagedAdamw,
        ]),
    );
    (shape, spread).prop_map(
        |(
            (arch, mode, batch, seq, rank, attention, checkpointing, precision, variable_lengths),
            (gpus, parallelism, offload, trained_layers, loss, optimizer),
        )| Job {
            arch,
            mode,
            micro_batch: batch,
            seq_len: seq,
            lora: Lora {
                rank,
                ..Lora::default()
            },
            attention,
            checkpointing,
            precision,
            variable_lengths,
            gpus,
            parallelism,
            offload,
            freeze_trainable_layers: trained_layers,
            loss,
            optimizer,
            ..Job::default()
        },
    )
}

/// One layer's input over the micro-batch, in fp32: what checkpointing adds to keep where it saves nothing
/// (a single layer keeps activations).
fn one_layer_input(job: &Job) -> f64 {
    4.0 * f64::from(job.arch.hidden) * f64::from(job.micro_batch) * f64::from(job.seq_len)
}

fn total(job: &Job) -> f64 {
    estimate(job).device_total
}

proptest! {
    #[test]
    fn more_batch_sequence_or_rank_never_needs_less(job in job_strategy()) {
        let base = total(&job);
        { let j = Job { micro_batch: job.micro_batch + 1, ..job.clone() }; prop_assert!(total(&j) >= base); }
        { let j = Job { seq_len: job.seq_len + 64, ..job.clone() }; prop_assert!(total(&j) >= base); }
        let mut higher = job.clone();
        higher.lora.rank += 8;
        prop_assert!(total(&higher) >= base);
        let mut more_layers = job.clone();
        more_layers.freeze_trainable_layers += 1;
        prop_assert!(total(&more_layers) >= base);
    }

    #[test]
    fn memory_savers_never_cost_memory(job in job_strategy()) {
        let base = total(&job);
        {
            // Checkpointing keeps each layer's input to save the rest; with a single layer keeping
            // activations there is nothing to save and the input is the (small) price.
            let j = Job { checkpointing: Checkpointing::Layer, ..job.clone() };
            // (and the allocator's share of it).
            let mut slack = if job.mode == Mode::Freeze || job.parallelism == Parallelism::Pipeline {
                2.0 * one_layer_input(&job)
            } else {
                0.0
            };
            // A recomputed recurrent mixer runs its chunked kernel over whole chunks: below one chunk of
            // tokens, its working set is a chunk's, not the sequence's.
            if let Some(h) = &job.arch.hybrid {
                slack += one_layer_input(&job) * f64::from(h.chunk.max(1));
            }
            prop_assert!(total(&j) <= base + slack + 1.0, "{} > {base}", total(&j));
        }
        // FlashAttention keeps its output for backward where eager attention does not (the output feeds a
        // frozen `o_proj`): one more q-wide tensor per layer, which the s × s scores it saves outweigh once
        // s · (4 + ab) > ab · head_dim, i.e. from a few dozen tokens on.
        if job.seq_len >= 256 {
            let j = Job { attention: AttentionImpl::Flash2, ..job.clone() };
            prop_assert!(total(&j) <= base + 1.0);
        }
        { let j = Job { loss: LossImpl::Fused, ..job.clone() }; prop_assert!(total(&j) <= base + 1.0); }
        if job.optimizer == Optimizer::Adamw {
            let j = Job { optimizer: Optimizer::Adamw8bit, ..job.clone() };
            prop_assert!(total(&j) <= base + 1.0);
        }
    }

    #[test]
    fn any_checked_job_gives_finite_figures(job in job_strategy(), scale in 0u32..12) {
        // Push the sizes towards the limits: every job that passes `check` must give finite figures.
        let mut j = job;
        j.micro_batch = j.micro_batch.saturating_mul(1 << scale).min(limits::MAX_BATCH);
        j.seq_len = j.seq_len.saturating_mul(1 << scale).min(limits::MAX_TOKENS);
        j.dataset_gib = f64::from(scale) * 8e4;
        prop_assert_eq!(j.check(), Ok(()));
        let e = estimate(&j);
        for v in [e.peak_allocated, e.peak_reserved, e.device_total, e.host_total, e.fit_need] {
            prop_assert!(v.is_finite() && v >= 0.0, "{v}");
        }
        prop_assert!(e.peak_reserved >= e.peak_allocated + ALLOCATOR_FIXED_GIB * 1073741824.0 - 1.0);
        // The breakdown is the phase the verdict compares: its parts add up to the device total.
        let parts: f64 = e.gpu.iter().map(|p| p.bytes).sum();
        prop_assert!((parts - e.device_total).abs() <= 1e-6 * e.device_total, "{parts} {}", e.device_total);
    }

    #[test]
    fn sharding_helps_with_more_gpus(
        gpus in 2u32..64,
        mode in prop::sample::select(vec![Mode::Full, Mode::Lora]),
        frozen_sharding in prop::sample::select(vec![
            FrozenSharding::Separate,
            FrozenSharding::SharedFlat,
            FrozenSharding::SharedFlatNoReshard,
        ]),
    ) {
        let job = Job { mode, gpus, frozen_sharding, ..Job::default() };
        let z1 = total(&Job { parallelism: Parallelism::Zero1, ..job.clone() });
        let z2 = total(&Job { parallelism: Parallelism::Zero2, ..job.clone() });
        let z3 = total(&Job { parallelism: Parallelism::Zero3, ..job.clone() });
        prop_assert!(z2 <= z1, "{z1} {z2}");
        // FSDP1 LoRA with a shared FlatParameter keeps gradients for the frozen weights (and on PyTorch ≤ 2.1
        // ends up with them whole): on two GPUs it really can need more than ZeRO-2, as the FSDP docs warn.
        if mode == Mode::Full || frozen_sharding == FrozenSharding::Separate {
            prop_assert!(z3 <= z2 + 1.0, "{z2} {z3}");
        }
        let z3_more = total(&Job { parallelism: Parallelism::Zero3, gpus: gpus + 1, ..job.clone() });
        prop_assert!(z3_more <= z3 + 1.0, "{z3} {z3_more}");
    }

    #[test]
    fn any_shape_gives_finite_numbers(
        layers in 0u32..1_000_000, hidden in 0u32..100_000, heads in 0u32..512,
        vocab in 0u32..1_000_000, seq in 0u32..10_000_000, batch in 0u32..1024,
    ) {
        let arch = Architecture { layers, hidden, heads, kv_heads: heads, head_dim: 128, vocab, ..Architecture::default() };
        for mode in [Mode::Full, Mode::Lora, Mode::Qlora, Mode::Freeze, Mode::Inference] {
            let e = estimate(&Job { arch: arch.clone(), mode, seq_len: seq, micro_batch: batch, ..Job::default() });
            for v in [e.peak_allocated, e.peak_reserved, e.device_total, e.host_total] {
                prop_assert!(v.is_finite() && v >= 0.0);
            }
        }
    }
}

#[test]
fn hand_derived_lora_llama_8b() {
    // Llama 3.1 8B, LoRA r=16 on all seven modules: per layer r·(d_in + d_out) summed =
    // 16·[(4096+4096) + 2·(4096+1024) + (4096+4096) + 2·(4096+14336) + (14336+4096)] = 16·(16384+10240+36864+18432)
    // = 1,310,720; × 32 layers = 41,943,040 trainable parameters.
    let e = estimate(&Job::default());
    assert_eq!(e.trainable_params, 41_943_040.0);
    // Base weights in bf16: 8,030,261,248 × 2 B.
    assert_eq!(e.gpu_bytes(Component::Weights), 8_030_261_248.0 * 2.0);
    // Adapters in fp32.
    assert_eq!(e.gpu_bytes(Component::Adapters), 41_943_040.0 * 4.0);
}

#[test]
fn hand_derived_kv_cache() {
    // Llama 3.1 8B, 4096 tokens × 2 sequences, bf16: 2·32 layers·8 heads·128·4096·2·2 B = 1 GiB exactly.
    let job = Job {
        mode: Mode::Inference,
        inference: Inference {
            prompt_tokens: 4096,
            new_tokens: 0,
            batch: 2,
            kv_dtype: KvDtype::Bf16,
        },
        ..Job::default()
    };
    assert_eq!(
        estimate(&job).gpu_bytes(Component::KvCache),
        1_073_741_824.0
    );
}

/// Per-term hand derivations on Llama 3.1 8B (N = 8,030,261,248 parameters).
#[test]
fn hand_derived_full_fine_tune_terms() {
    let n = 8_030_261_248.0;
    let job = Job {
        mode: Mode::Full,
        precision: Precision::Pure16,
        optimizer: Optimizer::Adamw,
        grad_accum: 2,
        ..Job::default()
    };
    let e = estimate(&job);
    assert_eq!(e.trainable_params, n);
    // Pure bf16: 2 B weights, 2 B gradients (kept between micro-batches), and torch AdamW's two moments
    // created with `zeros_like(param)`, so bf16 too: 4 B.
    assert_eq!(e.gpu_bytes(Component::Weights), 2.0 * n);
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 4.0 * n);
    if e.phase == Phase::Backward {
        assert_eq!(e.gpu_bytes(Component::Gradients), 2.0 * n);
    }
    // 8-bit Adam: two uint8 moments plus an fp32 absmax per 2048-element block.
    let e8 = estimate(&Job {
        optimizer: Optimizer::Adamw8bit,
        ..job.clone()
    });
    assert!((e8.gpu_bytes(Component::OptimizerStates) - (2.0 + 8.0 / 2048.0) * n).abs() < 1.0);
    // ZeRO-3 over 8 GPUs: weights and states divided by 8.
    let z3 = estimate(&Job {
        gpus: 8,
        parallelism: Parallelism::Zero3,
        ..job.clone()
    });
    assert_eq!(z3.gpu_bytes(Component::Weights), 2.0 * n / 8.0);
    assert_eq!(z3.gpu_bytes(Component::OptimizerStates), 4.0 * n / 8.0);
    // Mixed precision under ZeRO-3 (DeepSpeed): 16-bit working weights, an fp32 master copy (4 B) and fp32
    // moments (8 B), all sharded: the ZeRO paper's 2 + 2 + 12 bytes.
    let mixed = estimate(&Job {
        gpus: 8,
        parallelism: Parallelism::Zero3,
        precision: Precision::Mixed,
        ..job.clone()
    });
    assert_eq!(mixed.gpu_bytes(Component::Weights), 2.0 * n / 8.0);
    assert_eq!(mixed.gpu_bytes(Component::MasterWeights), 4.0 * n / 8.0);
    assert_eq!(mixed.gpu_bytes(Component::OptimizerStates), 8.0 * n / 8.0);
}

/// FSDP1 LoRA with frozen and adapter weights in one FlatParameter (litgpt), on Llama 3.1 8B over 2 GPUs.
#[test]
fn hand_derived_fsdp_shared_flat_parameter() {
    let base = Job {
        mode: Mode::Lora,
        gpus: 2,
        parallelism: Parallelism::Zero3,
        grad_accum: 2,
        ..Job::default()
    };
    let separate = estimate(&base);
    let p = separate.params;
    let decoder = p.per_layer * 32.0;
    // Gradients as if the decoder were not frozen: its bf16 weights' size, sharded over the 2 GPUs.
    let shared = estimate(&Job {
        frozen_sharding: FrozenSharding::SharedFlat,
        ..base.clone()
    });
    let extra = shared.gpu_bytes(Component::Gradients) - separate.gpu_bytes(Component::Gradients);
    assert!((extra - decoder * 2.0 / 2.0).abs() < 1.0, "extra {extra}");
    // PyTorch ≤ 2.1 also leaves the frozen decoder unsharded by the optimizer step: whole on each GPU.
    // With a short batch the optimizer step is the peak: each GPU holds its half of all bf16 weights plus
    // the other half of the decoder.
    let old = estimate(&Job {
        micro_batch: 1,
        seq_len: 64,
        ..Job {
            frozen_sharding: FrozenSharding::SharedFlatNoReshard,
            ..base.clone()
        }
    });
    assert_eq!(old.phase, Phase::OptimizerStep);
    let weights = old.gpu_bytes(Component::Weights);
    let expected = p.total * 2.0 / 2.0 + decoder * 2.0 / 2.0;
    assert!((weights - expected).abs() < 1.0, "{weights} vs {expected}");
}

/// Autocast over fp32 weights keeps a 16-bit cast of every weight that requires grad (`cached_cast`).
#[test]
fn hand_derived_autocast_weight_copies() {
    let inference = |precision| Job {
        mode: Mode::Inference,
        precision,
        weights: WeightFormat::Bf16,
        inference: Inference {
            prompt_tokens: 16,
            new_tokens: 0,
            batch: 1,
            kv_dtype: KvDtype::Bf16,
        },
        ..Job::default()
    };
    let pure = estimate(&inference(Precision::Pure16));
    let mixed = estimate(&inference(Precision::Mixed));
    let p = pure.params;
    // fp32 weights (4 B) instead of bf16 (2 B), plus a bf16 cast of every decoder linear and the LM head.
    let expected = 2.0 * p.total + 2.0 * (p.linear + p.lm_head);
    let got = mixed.peak_allocated - pure.peak_allocated;
    assert!(
        (got - expected).abs() < 1e-6 * expected,
        "{got} vs {expected}"
    );
}

#[test]
fn hand_derived_logits_and_quantized_weights() {
    // Logits with an fp32-upcast loss at `LogSoftmaxBackward`: the saved fp32 output, the incoming and the
    // outgoing fp32 gradient, 12 B per token × vocab (the 16-bit logits die before backward).
    // 4 × 2048 tokens × 128,256 × 12 B.
    let job = Job {
        loss: LossImpl::Fp32Logits,
        ..Job::default()
    };
    let e = estimate(&job);
    assert_eq!(
        e.gpu_bytes(Component::Logits),
        12.0 * 4.0 * 2048.0 * 128_256.0
    );
    // Fused linear + cross-entropy never materializes them.
    assert_eq!(
        estimate(&Job {
            loss: LossImpl::Fused,
            ..job.clone()
        })
        .gpu_bytes(Component::Logits),
        0.0
    );
    // NF4 QLoRA: decoder linears at 4.5 bits; embedding and LM head (2 × 128,256 × 4096) kept 16-bit,
    // upcast to fp32 by PEFT's prepare_model_for_kbit_training under the HF stack default.
    let q = Job {
        mode: Mode::Qlora,
        weights: WeightFormat::Nf4,
        upcast_non_quantized: false,
        ..Job::default()
    };
    let e = estimate(&q);
    let p = e.params;
    assert_eq!(e.gpu_bytes(Component::WeightsQuantized), p.linear * 0.5625);
    assert_eq!(e.gpu_bytes(Component::Weights), p.non_linear * 2.0);
    assert_eq!(p.embedding + p.lm_head, 2.0 * 128_256.0 * 4096.0);
}

/// Variable-length batches keep about one more copy of the short-lived memory reserved; tensors are the same.
#[test]
fn variable_lengths_raise_only_the_reserve() {
    let fixed = estimate(&Job::default());
    let varied = estimate(&Job {
        variable_lengths: true,
        ..Job::default()
    });
    assert_eq!(fixed.peak_allocated, varied.peak_allocated);
    assert_eq!(fixed.phase, Phase::Backward);
    let transient = [
        Component::Activations,
        Component::AttentionScores,
        Component::Logits,
        Component::Temporary,
    ]
    .iter()
    .map(|c| fixed.gpu_bytes(*c))
    .sum::<f64>();
    let extra = varied.peak_reserved - fixed.peak_reserved;
    let expected = (ALLOCATOR_VARIABLE_SHARE - ALLOCATOR_TRANSIENT_SHARE) * transient;
    assert!((extra - expected).abs() < 1.0, "{extra} vs {expected}");
    assert!(extra > 0.0);
    // That extra is cache the allocator frees before an OOM: what the job needs to run is unchanged.
    assert!((varied.gpu_bytes(Component::AllocatorCache) - extra).abs() < 1.0);
    assert!((varied.fit_need - fixed.device_total).abs() < 1.0);
}

/// Generation re-allocates the growing KV cache every step: about one more cache stays reserved.
#[test]
fn generation_reserves_one_more_kv_cache() {
    let job = |new_tokens| Job {
        mode: Mode::Inference,
        inference: Inference {
            prompt_tokens: 1,
            new_tokens,
            batch: 8,
            kv_dtype: KvDtype::Bf16,
        },
        ..Job::default()
    };
    let e = estimate(&job(4095));
    // Llama 3.1 8B: 2 · 32 layers · 8 KV heads · 128 · 4096 tokens · 8 sequences · 2 B = 4 GiB.
    let kv = e.gpu_bytes(Component::KvCache);
    assert_eq!(kv, 4.0 * 1_073_741_824.0);
    let gap = e.peak_reserved - e.peak_allocated;
    let prefill = e.gpu_bytes(Component::Temporary);
    let expected = ALLOCATOR_FIXED_GIB * 1_073_741_824.0
        + ALLOCATOR_TRANSIENT_SHARE * prefill
        + ALLOCATOR_VARIABLE_SHARE * kv;
    assert!((gap - expected).abs() < 1.0, "{gap} vs {expected}");
}

/// DPO on Llama 3.1 8B: the policy runs chosen and rejected in one batch, and the reference copy of the bf16
/// weights sits beside it unless LoRA's disabled adapters stand in for it.
#[test]
fn hand_derived_dpo_reference_and_pairs() {
    use vramfit::model::preference::{Objective, Reference};
    let sft = Job {
        mode: Mode::Full,
        micro_batch: 2,
        ..Job::default()
    };
    let dpo = Job {
        objective: Objective::Dpo,
        ..sft.clone()
    };
    let e = estimate(&dpo);
    // 8,030,261,248 parameters × 2 B.
    assert_eq!(
        e.gpu_bytes(Component::ReferenceModel),
        8_030_261_248.0 * 2.0
    );
    // Chosen + rejected: 2 × 2 sequences of 2048 tokens, N = 8192. LLaMA-Factory's DPO loss builds their
    // full logits, 12 B × 8192 × 128,256 = 12,608,077,824 B, as SFT with micro-batch 4 would.
    let loss_of = |job: &Job| {
        let (job, _) = vramfit::model::normalize::normalize(job);
        vramfit::model::loss::loss_bytes(&job, &vramfit::model::shapes::Shapes::of(&job))
    };
    let factory = Job {
        stack: Stack::LlamaFactory,
        ..dpo.clone()
    };
    assert_eq!(loss_of(&factory), 12_608_077_824.0);
    assert_eq!(
        loss_of(&Job {
            micro_batch: 4,
            ..sft.clone()
        }),
        12_608_077_824.0
    );
    // TRL's fused head: a 4096 × 32,768 bf16 tile (268,435,456 B), the hidden states, their fp32 gradient and
    // its cast, 8192 × 4096 × (2 + 4 + 2) = 268,435,456 B, and the trained head's fp32 gradient and cast,
    // 128,256 × 4096 × 6 = 3,152,019,456 B: 3,688,890,368 B.
    assert_eq!(loss_of(&dpo), 3_688_890_368.0);
    let lora = Job {
        mode: Mode::Lora,
        reference: Reference::DisabledAdapters,
        ..dpo.clone()
    };
    assert_eq!(estimate(&lora).gpu_bytes(Component::ReferenceModel), 0.0);
    // A reward model has no vocabulary logits; GRPO's colocated engine is what it is given.
    let rm = estimate(&Job {
        objective: Objective::RewardModel,
        ..sft.clone()
    });
    assert_eq!(rm.gpu_bytes(Component::Logits), 0.0);
    let mut grpo = Job {
        objective: Objective::Grpo,
        reference: Reference::None,
        ..sft
    };
    grpo.grpo.vllm_gib = 24.0;
    let g = estimate(&grpo);
    assert_eq!(g.gpu_bytes(Component::ServingEngine), 24.0 * 1073741824.0);
    assert_eq!(g.gpu_bytes(Component::ReferenceModel), 0.0);
}
