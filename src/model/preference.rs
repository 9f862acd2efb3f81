//! Preference and RL fine-tuning on top of a training job: what each objective adds to plain SFT. The
//! conventions are TRL's (`DPOTrainer`, `ORPOTrainer`, `CPOTrainer` (SimPO), `KTOTrainer`, `RewardTrainer`,
//! `GRPOTrainer`), which LLaMA-Factory and OpenRLHF follow for the same objectives.

use serde::{Deserialize, Serialize};

/// The training objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Next-token prediction (SFT, continued pre-training).
    #[default]
    Sft,
    /// DPO/IPO: chosen and rejected sequences in one concatenated forward, against a reference model.
    Dpo,
    /// ORPO: chosen and rejected, no reference model.
    Orpo,
    /// SimPO / CPO: chosen and rejected, no reference model.
    Simpo,
    /// KTO: unpaired examples against a reference model.
    Kto,
    /// Reward modelling: chosen and rejected through a scalar head instead of the LM head.
    RewardModel,
    /// GRPO: `generations` completions per prompt are generated, then trained on.
    Grpo,
}

/// Where the reference model of DPO, KTO and GRPO comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Reference {
    /// A second, frozen copy of the model on the GPU (TRL's default without PEFT).
    #[default]
    Copy,
    /// With PEFT, the base model with the adapters disabled is the reference: no copy (TRL's default when a
    /// `peft_config` is given).
    DisabledAdapters,
    /// Reference log-probabilities computed once before training (`precompute_ref_log_probs=True`): none.
    Precomputed,
    /// No reference at all (GRPO with `beta = 0`, TRL's default since 0.19).
    None,
}

/// GRPO settings (TRL `GRPOConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Grpo {
    /// Completions per prompt (`num_generations`).
    pub generations: u32,
    /// Longest completion (`max_completion_length`).
    pub completion_tokens: u32,
    /// GPU memory a colocated vLLM engine takes, GiB (`vllm_mode="colocate"`: its
    /// `vllm_gpu_memory_utilization` share of the GPU); 0 with a separate vLLM server or HF generation.
    pub vllm_gib: f64,
}

impl Default for Grpo {
    /// TRL `GRPOConfig` defaults: 8 generations, 256 completion tokens; no colocated engine.
    fn default() -> Self {
        Grpo {
            generations: 8,
            completion_tokens: 256,
            vllm_gib: 0.0,
        }
    }
}

impl Objective {
    /// Sequences the policy runs per example: 2 for paired objectives (TRL `concatenated_forward` stacks
    /// chosen and rejected into one batch), 1 otherwise.
    pub fn sequences_per_example(self) -> u32 {
        match self {
            Objective::Dpo | Objective::Orpo | Objective::Simpo | Objective::RewardModel => 2,
            Objective::Sft | Objective::Kto | Objective::Grpo => 1,
        }
    }

    /// Whether the objective compares with a reference model.
    pub fn uses_reference(self) -> bool {
        matches!(self, Objective::Dpo | Objective::Kto | Objective::Grpo)
    }

    /// Whether the LM head produces vocabulary logits (a reward model has a 1-wide scalar head instead:
    /// `AutoModelForSequenceClassification` with `num_labels=1`).
    pub fn has_vocab_logits(self) -> bool {
        self != Objective::RewardModel
    }
}

/// Whether a reference copy of the weights sits on the GPU.
pub fn reference_copy(objective: Objective, reference: Reference, peft: bool) -> bool {
    objective.uses_reference()
        && match reference {
            Reference::Copy => true,
            // Disabling adapters only works when there are adapters.
            Reference::DisabledAdapters => !peft,
            Reference::Precomputed | Reference::None => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_pairs() {
        assert_eq!(Objective::Dpo.sequences_per_example(), 2);
        assert_eq!(Objective::Kto.sequences_per_example(), 1);
        assert!(reference_copy(Objective::Dpo, Reference::Copy, true));
        assert!(!reference_copy(
            Objective::Dpo,
            Reference::DisabledAdapters,
            true
        ));
        assert!(reference_copy(
            Objective::Dpo,
            Reference::DisabledAdapters,
            false
        ));
        assert!(!reference_copy(Objective::Orpo, Reference::Copy, false));
        assert!(!Objective::RewardModel.has_vocab_logits());
    }
}
