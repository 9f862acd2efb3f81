//! Adapters: how many parameters a job trains, how many of them are adapters, and the adapters' bytes.

use super::arch::MlpKind;
use super::arch::ParamCounts;
use super::job::{Job, Mode, Module};
use super::peft;
use super::shapes::Shapes;

/// Trainable parameters, and the share of them that are adapters (rather than base weights).
///
/// LoRA on a `d_in × d_out` module adds `r·(d_in + d_out)` (Hu et al. 2021); DoRA adds a magnitude vector of
/// `d_out` (Liu et al. 2024). `modules_to_save` trains full copies of the embedding / LM head. Trainable
/// tokens train `n · h` embedding rows and adapt no module ([`peft::trainable_tokens_params`]); their config
/// (`TrainableTokensConfig`) has no `modules_to_save`.
/// Freeze-tuning trains the last n decoder layers (LLaMA-Factory `freeze_trainable_layers`).
pub fn trainable(job: &Job, p: &ParamCounts) -> (f64, f64) {
    let layers = f64::from(job.arch.layers);
    match job.mode {
        Mode::Inference => (0.0, 0.0),
        Mode::Full => (p.total, 0.0),
        Mode::Freeze => {
            let n = f64::from(job.freeze_trainable_layers.min(job.arch.layers));
            (n * p.per_layer, 0.0)
        }
        Mode::Badam | Mode::Lisa => (super::full_tuning::active_params(job, p), 0.0),
        Mode::Lora | Mode::Qlora => {
            let method = job.lora.method;
            let mut adapters = 0.0;
            // A hybrid stack's widths carry the share of layers holding each block (`linear_modules`):
            // a LoRA pair is `r·(d_in + d_out)`, so the share scales the whole pair, not its input alone.
            let (attention_share, mlp_share, _) = super::recurrent::layer_shares(&job.arch);
            let merged = super::activations::merged_expert_lora(job, &job.arch);
            // Leading dense layers (DeepSeek `first_k_dense_replace`) hold one MLP of `intermediate` width
            // instead of experts.
            let dense_share = job.arch.moe.map_or(0.0, |moe| {
                f64::from(moe.dense_layers.min(job.arch.layers)) / f64::from(job.arch.layers.max(1))
            });
            for (m, d_in, d_out) in job.arch.linear_modules() {
                if !method.adapts_modules() || !job.arch.adapts(m, &job.lora.targets) || d_in <= 0.0
                {
                    continue;
                }
                let share = if peft::is_feed_forward(m) {
                    mlp_share
                } else {
                    attention_share
                };
                if share <= 0.0 {
                    continue;
                }
                let d_in = d_in / share;
                // An MoE layer's gate/up/down stand for every routed expert and the shared one: PEFT adapts
                // each (the shared expert at its own width), unless this release leaves the routed experts
                // frozen (`Moe::experts_adapted`).
                let dora = job.lora.dora && method == peft::Method::Lora;
                let ff = peft::is_feed_forward(m);
                let one = |d_in: f64, d_out: f64| {
                    peft::module_params(
                        method,
                        job.lora.rank,
                        job.lora.butterfly_factors,
                        d_in,
                        d_out,
                        ff,
                    ) + if dora { d_out } else { 0.0 }
                };
                let copies = job.arch.expert_copies(m);
                match job.arch.moe.filter(|_| copies > 1.0) {
                    Some(moe) => {
                        let per_copy_in = d_in / copies;
                        if dense_share > 0.0 {
                            let di = f64::from(job.arch.intermediate);
                            adapters += share
                                * dense_share
                                * if m == Module::Down {
                                    one(di, d_out)
                                } else {
                                    one(per_copy_in, di)
                                };
                        }
                        let share = share * (1.0 - dense_share);
                        if moe.experts_adapted(job.versions.transformers) {
                            // Through PEFT's parameter wrapper (transformers 5's 3-D experts,
                            // `merged_expert_lora`), gate and up are one `gate_up_proj` of `2·I` outputs,
                            // wrapped once for each of the two names that reach it.
                            let fused_gate_up = merged
                                && job.arch.mlp == MlpKind::Gated
                                && matches!(m, Module::Gate | Module::Up);
                            let d_out = if fused_gate_up { 2.0 * d_out } else { d_out };
                            adapters += share * f64::from(moe.experts) * one(per_copy_in, d_out);
                        }
                        if moe.shared_intermediate > 0 {
                            let si = f64::from(moe.shared_intermediate);
                            adapters += share
                                * if m == Module::Down {
                                    one(si, d_out)
                                } else {
                                    one(per_copy_in, si)
                                };
                        }
                    }
                    None => adapters += share * one(d_in, d_out),
                }
            }
            // Two small linears of an MoE layer that `all-linear` reaches, each `h → width`: the router
            // (`mlp.gate`, h → E), which PEFT's MoE table targets beside the wrapped experts, and Qwen2-MoE's
            // `shared_expert_gate` (h → 1).
            let gate_targeted = method.adapts_modules() && job.lora.targets.contains(&Module::Gate);
            let moe_linear = |width: f64| {
                mlp_share
                    * (1.0 - dense_share)
                    * peft::module_params(
                        method,
                        job.lora.rank,
                        job.lora.butterfly_factors,
                        f64::from(job.arch.hidden),
                        width,
                        true,
                    )
            };
            if let Some(moe) = job.arch.moe.filter(|_| merged && gate_targeted) {
                adapters += moe_linear(f64::from(moe.experts));
            }
            if job.arch.shared_expert_gate() && gate_targeted {
                adapters += moe_linear(1.0);
            }
            adapters *= layers;
            adapters += peft::prompt_params(job, &job.arch);
            adapters += peft::trainable_tokens_params(job, &job.arch);
            let saves_modules = method != peft::Method::TrainableTokens;
            let mut full = 0.0;
            if job.lora.train_embed && saves_modules {
                full += p.embedding;
            }
            if job.lora.train_lm_head && saves_modules {
                full += if p.lm_head > 0.0 {
                    p.lm_head
                } else {
                    p.embedding
                };
            }
            (adapters + full, adapters)
        }
    }
}

/// Adapter parameters that are stored but not trained: LoRA-FA's frozen `lora_A` (`r·d_in` per module),
/// VeRA's `vera_A`/`vera_B`, one pair shared by every adapted module and sized by the largest input and
/// output widths among them (PEFT `vera/model.py` `_find_dim`), and trainable tokens' copy of the original
/// rows (`trainable_tokens_original`, a buffer the shape of the delta, `n · h`, kept to unmerge; PEFT
/// `trainable_tokens/layer.py` `update_layer`), also beside LoRA with `trainable_token_indices`.
pub fn frozen_adapter_params(job: &Job) -> f64 {
    if !matches!(job.mode, Mode::Lora | Mode::Qlora) {
        return 0.0;
    }
    let r = f64::from(job.lora.rank);
    let targeted = job
        .arch
        .linear_modules()
        .into_iter()
        .filter(|(m, d_in, _)| job.arch.adapts(*m, &job.lora.targets) && *d_in > 0.0);
    match job.lora.method {
        peft::Method::LoraFa => {
            targeted.map(|(_, d_in, _)| r * d_in).sum::<f64>() * f64::from(job.arch.layers)
        }
        peft::Method::Vera => {
            let (max_in, max_out) = targeted
                .fold((0.0_f64, 0.0_f64), |(i, o), (_, d_in, d_out)| {
                    (i.max(d_in), o.max(d_out))
                });
            r * (max_in + max_out)
        }
        // BOFT's permutation matrices, `boft_P`: `factors × d_in × d_in` per module, an fp32 buffer
        // (`boft/layer.py` `update_layer`, `register_buffer("boft_P", …)`).
        peft::Method::Boft => {
            let n = f64::from(job.lora.butterfly_factors.max(1));
            targeted.map(|(_, d_in, _)| n * d_in * d_in).sum::<f64>() * f64::from(job.arch.layers)
        }
        _ => peft::trainable_tokens_params(job, &job.arch),
    }
}

/// Adapter bytes on the busiest GPU: trained and frozen adapter parameters in fp32. PEFT keeps adapter
/// weights in fp32 (`autocast_adapter_dtype=True`, `peft/tuners/tuners_utils.py`), so their gradients and
/// optimizer states are fp32 whatever the base precision; LoRA-FA's `lora_A` and VeRA's shared random
/// projections sit beside them in fp32 too, and so does trainable tokens' `trainable_tokens_original`
/// (`cast_adapter_dtype` upcasts bf16/fp16 `BufferDict` entries as well as parameters). Stacks whose own LoRA
/// is built in the model dtype keep it, its gradients and its optimizer states in that dtype
/// ([`adapter_param_bytes`]).
pub fn adapter_bytes(job: &Job, s: &Shapes) -> f64 {
    (s.adapter + frozen_adapter_params(job)) * adapter_param_bytes(job, s) * s.train_share
}

/// Bytes of one adapter parameter (and of its gradient): fp32 under PEFT, the working weights' dtype where the
/// stack builds its own LoRA layers in it (`Stack::adapters_in_model_dtype`: torchtune's
/// `set_default_dtype(bf16)`, litgpt's `bf16-true`). The torchtune oracle holds Llama 3.2 1B's 42,467,328
/// LoRA parameters in 84,934,656 B and their AdamW states in as many again per moment.
pub fn adapter_param_bytes(job: &Job, s: &Shapes) -> f64 {
    if job.stack.adapters_in_model_dtype() {
        s.working
    } else {
        4.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Architecture, Module};

    fn llama_8b() -> Architecture {
        crate::model::catalog_arch("llama-3.1-8b")
    }

    /// LoRA r16 on q/v of Llama-3.1-8B (h 4096, KV width 1024, 32 layers): q `16·(4096 + 4096)` and v
    /// `16·(4096 + 1024)` per layer = 212,992; × 32 = 6,815,744 (PEFT prints "trainable params: 6,815,744").
    #[test]
    fn lora_on_q_and_v_of_llama_8b() {
        let job = Job {
            arch: llama_8b(),
            mode: Mode::Lora,
            lora: super::super::job::Lora {
                rank: 16,
                targets: vec![Module::Q, Module::V],
                ..Default::default()
            },
            ..Job::default()
        };
        let (trainable, adapters) = trainable(&job, &job.arch.params());
        assert_eq!(adapters, 6_815_744.0);
        assert_eq!(trainable, adapters);
        let s = Shapes::of(&job);
        assert_eq!(adapter_bytes(&job, &s), 6_815_744.0 * 4.0);
    }

    /// Phi-3-mini's fused `qkv_proj` (3072 → 9216) and `gate_up_proj` (3072 → 16,384) carry one adapter each:
    /// r16 on every linear is `16·(3072 + 9216) + 16·(3072 + 3072) + 16·(3072 + 16,384) + 16·(8192 + 3072)`
    /// = 786,432 per layer, × 32 = 25,165,824 (what PEFT builds on the model). Counted as separate q/k/v and
    /// gate/up it would be 30,408,704.
    #[test]
    fn fused_projections_carry_one_adapter() {
        let job = Job {
            arch: crate::model::catalog_arch("phi-3-mini-4k-instruct"),
            mode: Mode::Lora,
            lora: super::super::job::Lora {
                rank: 16,
                ..Default::default()
            },
            ..Job::default()
        };
        assert!(job.arch.fused.qkv && job.arch.fused.gate_up);
        assert_eq!(trainable(&job, &job.arch.params()).1, 25_165_824.0);
    }

    /// Qwen1.5-MoE-A2.7B under transformers 5 (24 layers, h 2048, MHA): PEFT's `all-linear` reaches no routed
    /// expert, so r16 trains q/k/v/o (4 · 16 · 4096 = 262,144), the shared expert at its own width 5632
    /// (3 · 16 · (2048 + 5632) = 368,640) and `shared_expert_gate` (16 · (2048 + 1) = 32,784): 663,568 per
    /// layer, × 24 = 15,925,632. Under transformers 4.57 the 60 routed experts (width 1408) are linears PEFT
    /// adapts too: 60 · 3 · 16 · (2048 + 1408) = 9,953,280 more per layer.
    #[test]
    fn experts_out_of_peft_reach_stay_frozen() {
        let mut job = Job {
            arch: crate::model::catalog_arch("qwen1.5-moe-a2.7b"),
            mode: Mode::Lora,
            lora: super::super::job::Lora {
                rank: 16,
                ..Default::default()
            },
            ..Job::default()
        };
        assert_eq!(trainable(&job, &job.arch.params()).1, 15_925_632.0);
        job.versions.transformers = crate::model::Version::new(4, 57);
        assert_eq!(
            trainable(&job, &job.arch.params()).1,
            15_925_632.0 + 24.0 * 9_953_280.0
        );
    }

    /// Freeze-tuning the last 2 of 32 layers trains 2 layers' parameters, no adapters.
    #[test]
    fn freeze_trains_whole_layers() {
        let job = Job {
            arch: llama_8b(),
            mode: Mode::Freeze,
            freeze_trainable_layers: 2,
            ..Job::default()
        };
        let p = job.arch.params();
        assert_eq!(trainable(&job, &p), (2.0 * p.per_layer, 0.0));
        assert_eq!(frozen_adapter_params(&job), 0.0);
    }

    /// Trainable tokens on Llama-3.2-1B (hidden 2048), 100 tokens: 100 · 2048 = 204,800 trainable
    /// parameters, all of them adapters, whatever the targets or `modules_to_save` flags; the frozen copy of
    /// the original rows is as large. Adapter bytes: (204,800 + 204,800) · 4 B = 1,638,400.
    #[test]
    fn trainable_tokens_train_rows_and_keep_their_originals() {
        let job = Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode: Mode::Lora,
            lora: super::super::job::Lora {
                method: peft::Method::TrainableTokens,
                trainable_tokens: 100,
                train_embed: true,
                train_lm_head: true,
                ..Default::default()
            },
            ..Job::default()
        };
        assert_eq!(trainable(&job, &job.arch.params()), (204_800.0, 204_800.0));
        assert_eq!(frozen_adapter_params(&job), 204_800.0);
        assert_eq!(adapter_bytes(&job, &Shapes::of(&job)), 1_638_400.0);
    }

    /// LoRA-FA keeps `lora_A` frozen: r·d_in per targeted module and layer (r 8, q only: 8·4096·32).
    #[test]
    fn lora_fa_freezes_a() {
        let job = Job {
            arch: llama_8b(),
            mode: Mode::Lora,
            lora: super::super::job::Lora {
                rank: 8,
                targets: vec![Module::Q],
                method: peft::Method::LoraFa,
                ..Default::default()
            },
            ..Job::default()
        };
        assert_eq!(frozen_adapter_params(&job), 8.0 * 4096.0 * 32.0);
    }
}
