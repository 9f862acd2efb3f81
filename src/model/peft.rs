//! The PEFT family beyond LoRA: what each method trains, what it keeps in memory besides, and what its
//! forward saves for backward. Each formula follows the method's module in PEFT 0.21 (`peft/tuners/<method>/`)
//! and is checked against the fake-tensor oracle running PEFT's real code (`scripts/golden-peft.py`,
//! `tests/golden_peft.rs`).
//!
//! Methods that differ from LoRA only in how the adapter is initialised (rsLoRA, PiSSA, OLoRA, LoftQ init,
//! EVA) have LoRA's memory exactly: they are LoRA here, and the page says so.

use super::arch::Architecture;
use super::job::{Job, Module};
use serde::{Deserialize, Serialize};

/// Which PEFT method adapts the model (`peft_type` of an `adapter_config.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// LoRA (and DoRA with `dora`; rsLoRA/PiSSA/OLoRA initialisations have the same memory).
    #[default]
    Lora,
    /// LoRA-FA: `lora_A` frozen after initialisation, only `lora_B` trained (PEFT `create_lorafa_optimizer`).
    LoraFa,
    /// AdaLoRA: SVD-shaped triplets `lora_A`, `lora_E`, `lora_B` with `init_r` = the rank.
    AdaLora,
    /// VeRA: frozen shared random `A`/`B`, trained scaling vectors `lambda_d` (r) and `lambda_b` (d_out).
    Vera,
    /// IA³: a learned vector per adapted module (output scaling; input scaling on feed-forward modules).
    Ia3,
    /// LoHa: Hadamard product of two low-rank factorizations, `(w1a·w1b) ⊙ (w2a·w2b)`.
    Loha,
    /// LoKr: Kronecker product `w1 ⊗ (w2a·w2b)`.
    Lokr,
    /// OFT: block-diagonal orthogonal rotation of each weight; the rank field is the block size.
    Oft,
    /// BOFT: butterfly-factored orthogonal rotation of each module's input; the rank field is the block size,
    /// `Lora::butterfly_factors` the factors (PEFT `BOFTConfig`).
    Boft,
    /// Prompt tuning: `virtual_tokens` learned input embeddings.
    PromptTuning,
    /// Prefix tuning: learned key/value prefixes of `virtual_tokens` in every layer.
    PrefixTuning,
    /// P-tuning: virtual tokens produced by an MLP prompt encoder.
    PTuning,
    /// Trainable tokens (PEFT ≥ 0.15 `TrainableTokensConfig`, `peft_type` TRAINABLE_TOKENS): new rows for
    /// `trainable_tokens` entries of the input embedding (shared by a tied LM head), nothing else
    /// ([`trainable_tokens_params`]).
    TrainableTokens,
}

impl Method {
    pub const ALL: [Method; 13] = [
        Method::Lora,
        Method::LoraFa,
        Method::AdaLora,
        Method::Vera,
        Method::Ia3,
        Method::Loha,
        Method::Lokr,
        Method::Oft,
        Method::Boft,
        Method::PromptTuning,
        Method::PrefixTuning,
        Method::PTuning,
        Method::TrainableTokens,
    ];

    /// Whether the method prepends learned tokens instead of adapting modules.
    pub fn is_prompt(self) -> bool {
        matches!(
            self,
            Method::PromptTuning | Method::PrefixTuning | Method::PTuning
        )
    }

    /// Whether the method puts an adapter on the targeted linear modules (`target_modules`): every method but
    /// the prompt methods and trainable tokens, which adapt the input embedding instead.
    pub fn adapts_modules(self) -> bool {
        !self.is_prompt() && self != Method::TrainableTokens
    }

    /// Whether the method materializes a weight-sized delta (or rotated weight) per adapted module in every
    /// forward: LoHa, LoKr and OFT build the full `d_out × d_in` matrix before the matmul.
    pub fn materializes_weights(self) -> bool {
        matches!(self, Method::Loha | Method::Lokr | Method::Oft)
    }
}

/// The smaller of the two factors `m ≤ n` of `dim` with `m · n = dim` and `m` as close to `√dim` as possible:
/// PEFT `lokr.layer.factorization(dim, factor=-1)`.
pub fn factorization(dim: u64) -> (u64, u64) {
    let mut m = (dim as f64).sqrt().floor() as u64;
    while m > 1 && dim % m != 0 {
        m -= 1;
    }
    let m = m.max(1);
    (m, dim / m)
}

/// Parameters one adapted `d_in × d_out` module trains (PEFT 0.21 `<method>/layer.py` `update_layer`):
/// - LoRA/AdaLoRA: `r·(d_in + d_out)` (AdaLoRA adds the `r` singular values `lora_E`);
/// - LoRA-FA: `r·d_out` (`lora_B` only; `lora_A` is frozen);
/// - VeRA: `r + d_out` (`vera_lambda_d`, `vera_lambda_b`);
/// - IA³: `d_out`, or `d_in` on feed-forward modules (input scaling);
/// - LoHa: `2·r·(d_in + d_out)` (`hada_w1_a/b`, `hada_w2_a/b`);
/// - LoKr: `w1` of the small factors `(m_out × m_in)` plus `w2` of the large ones, low-rank
///   `r·(n_out + n_in)` when `r < max(n_out, n_in)/2`, else full `n_out · n_in`;
/// - OFT: `d_in / b` blocks of `b·(b−1)/2` (the strict upper triangle of a skew-symmetric `b × b` matrix
///   that rotates the input; `oft_block_size` b, `r = d_in / b`);
/// - BOFT: `boft_R` of `factors × (d_in / b) × b × b` (full blocks, made skew-symmetric in the forward) and
///   the output scale `boft_s` (`d_out`): `factors · d_in · b + d_out`.
pub fn module_params(
    method: Method,
    rank: u32,
    factors: u32,
    d_in: f64,
    d_out: f64,
    feed_forward: bool,
) -> f64 {
    let r = f64::from(rank);
    match method {
        Method::Lora => r * (d_in + d_out),
        Method::AdaLora => r * (d_in + d_out) + r,
        Method::LoraFa => r * d_out,
        Method::Vera => r + d_out,
        Method::Ia3 => {
            if feed_forward {
                d_in
            } else {
                d_out
            }
        }
        Method::Loha => 2.0 * r * (d_in + d_out),
        Method::Lokr => {
            let (mo, no) = factorization(d_out as u64);
            let (mi, ni) = factorization(d_in as u64);
            let w1 = (mo * mi) as f64;
            let (no, ni) = (no as f64, ni as f64);
            let w2 = if r < no.max(ni) / 2.0 {
                r * (no + ni)
            } else {
                no * ni
            };
            w1 + w2
        }
        Method::Oft => {
            let b = r.max(1.0);
            (d_in / b).floor() * b * (b - 1.0) / 2.0
        }
        Method::Boft => f64::from(factors.max(1)) * d_in * r.max(1.0) + d_out,
        Method::PromptTuning | Method::PrefixTuning | Method::PTuning | Method::TrainableTokens => {
            0.0
        }
    }
}

/// Trainable parameters of a prompt-learning method (PEFT `PromptEmbedding`, `PrefixEncoder`,
/// `PromptEncoder`): prompt tuning `n·h`; prefix tuning `n · layers · 2 · kv_width` (PEFT sizes the prefix
/// by the key/value heads); P-tuning's MLP encoder `h·e + e + e·e + e + e·h + h` plus the `n·h` embedding,
/// with `e` the encoder width.
pub fn prompt_params(job: &Job, arch: &Architecture) -> f64 {
    let n = f64::from(job.lora.virtual_tokens);
    let h = f64::from(arch.hidden);
    match job.lora.method {
        Method::PromptTuning => n * h,
        Method::PrefixTuning => n * f64::from(arch.layers) * 2.0 * arch.kv_width(),
        Method::PTuning => {
            let e = f64::from(job.lora.encoder_hidden.max(1));
            n * h + h * e + e + e * e + e + e * h + h
        }
        _ => 0.0,
    }
}

/// Parameters PEFT's trainable tokens train: `n · h`, one embedding row per listed token, `n` at most the
/// vocabulary (`tuners/trainable_tokens/layer.py` `update_layer`: `trainable_tokens_delta` is
/// `nn.Parameter(weight[token_indices].clone())`, `len(token_indices) × embedding_dim`). A tied LM head is
/// wrapped by a `TrainableTokensLayer` tied to the embedding's (`tied_adapter`, `model.py`
/// `inject_adapter`), which reuses the same delta: nothing more trains. PEFT keeps a frozen copy of the
/// original rows beside it (`trainable_tokens_original`, a buffer of the same shape; see
/// [`super::adapters::frozen_adapter_params`]). LoRA's `trainable_token_indices` builds the same layer
/// beside the adapters (`tuners/lora/model.py` `_create_and_replace` hands it to `TrainableTokensLayer`).
/// 0 when no token rows train ([`token_rows`]).
pub fn trainable_tokens_params(job: &Job, arch: &Architecture) -> f64 {
    f64::from(token_rows(job).min(arch.vocab)) * f64::from(arch.hidden)
}

/// Embedding rows PEFT trains as trainable tokens: the method's `token_indices`, or LoRA's
/// `trainable_token_indices` ([`super::Lora::with_tokens`]); 0 otherwise.
pub fn token_rows(job: &Job) -> u32 {
    match job.lora.method {
        Method::TrainableTokens => job.lora.trainable_tokens,
        Method::Lora if job.lora.with_tokens => job.lora.trainable_tokens,
        _ => 0,
    }
}

/// Whether a module is a feed-forward one for IA³ (PEFT `feedforward_modules`: the MLP's down projection,
/// whose input is scaled).
pub fn is_feed_forward(m: Module) -> bool {
    m == Module::Down
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lokr_factors_like_peft() {
        assert_eq!(factorization(2048), (32, 64));
        assert_eq!(factorization(512), (16, 32));
        assert_eq!(factorization(4096), (64, 64));
        assert_eq!(factorization(8192), (64, 128));
        assert_eq!(factorization(7), (1, 7));
    }

    #[test]
    fn hand_counted_parameters() {
        // IA³ on Llama-3.2-1B k, v (512 wide) and down (8192 in): 16 · (512 + 512 + 8192) = 147,456.
        let per_layer = module_params(Method::Ia3, 0, 1, 2048.0, 512.0, false) * 2.0
            + module_params(Method::Ia3, 0, 1, 8192.0, 2048.0, true);
        assert_eq!(per_layer * 16.0, 147_456.0);
        assert_eq!(
            module_params(Method::Loha, 8, 1, 2048.0, 2048.0, false),
            65_536.0
        );
        assert_eq!(
            module_params(Method::Vera, 256, 1, 2048.0, 2048.0, false),
            2304.0
        );
        assert_eq!(
            module_params(Method::Oft, 32, 1, 2048.0, 2048.0, false),
            64.0 * 496.0
        );
    }

    /// 100 trainable tokens on Llama-3.2-1B (hidden 2048, vocabulary 128,256): 100 · 2048 = 204,800
    /// parameters, whatever the rank or targets; more tokens than the vocabulary train the whole vocabulary
    /// (128,256 · 2048 = 262,668,288). Other methods train no token rows.
    #[test]
    fn trainable_tokens_train_one_row_per_token() {
        let arch = crate::catalog::model("llama-3.2-1b")
            .unwrap()
            .arch()
            .clone();
        let mut job = Job {
            arch: arch.clone(),
            ..Job::default()
        };
        job.lora.method = Method::TrainableTokens;
        job.lora.trainable_tokens = 100;
        assert_eq!(trainable_tokens_params(&job, &arch), 204_800.0);
        job.lora.trainable_tokens = 1 << 20;
        assert_eq!(trainable_tokens_params(&job, &arch), 262_668_288.0);
        job.lora.method = Method::Lora;
        assert_eq!(trainable_tokens_params(&job, &arch), 0.0);
        assert!(!Method::TrainableTokens.adapts_modules() && !Method::TrainableTokens.is_prompt());
    }
}
