//! "Verify it yourself": a few lines to paste into a training script or notebook that print the figures the
//! estimate predicts (`max_memory_allocated`, `max_memory_reserved`), and the list of assumptions behind the
//! estimate, each tied to the setting that changes it.

use crate::form::Form;
use crate::model::{AttentionImpl, Checkpointing, LossImpl, Mode, Stack};

/// Python that measures a training step (or a generation) the way the estimate's figures are defined:
/// `torch.cuda.reset_peak_memory_stats()` before, `max_memory_allocated()` / `max_memory_reserved()` after
/// (PyTorch `torch.cuda` memory statistics), in GiB, beside the predicted values.
pub fn snippet(form: &Form, predicted_allocated_gib: f64, predicted_reserved_gib: f64) -> String {
    let work = if form.mode == Mode::Inference {
        "model.generate(**inputs, max_new_tokens=NEW_TOKENS)   # your generation call"
    } else {
        "trainer.train()   # or: loss = model(**batch).loss; loss.backward(); optimizer.step()"
    };
    format!(
        "import torch\n\
         torch.cuda.reset_peak_memory_stats()\n\
         {work}\n\
         gib = 2**30\n\
         print(f\"max_memory_allocated {{torch.cuda.max_memory_allocated() / gib:.2f}} GiB (vramfit: {predicted_allocated_gib:.2})\")\n\
         print(f\"max_memory_reserved  {{torch.cuda.max_memory_reserved() / gib:.2f}} GiB (vramfit: {predicted_reserved_gib:.2})\")\n"
    )
}

/// One assumption the estimate rests on, with the setting (link key of [`crate::settings`]) that changes it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Assumption {
    /// The training stack preset and what it decides.
    Stack { stack: Stack },
    /// Batches vary in length (dynamic padding) or are packed/padded to the length.
    Lengths { variable: bool },
    /// How the loss is computed.
    Loss { loss: LossImpl },
    /// The attention kernel.
    Attention { attention: AttentionImpl },
    /// Activation checkpointing.
    Checkpointing { checkpointing: Checkpointing },
    /// Library versions the model's version-dependent terms assume (PyTorch, transformers).
    Versions,
}

impl Assumption {
    /// The setting that changes it.
    pub fn key(self) -> &'static str {
        match self {
            Assumption::Stack { .. } => "stack",
            Assumption::Lengths { .. } => "varlen",
            Assumption::Loss { .. } => "loss",
            Assumption::Attention { .. } => "attn",
            Assumption::Checkpointing { .. } => "ckpt",
            Assumption::Versions => "stack",
        }
    }
}

/// What the estimate of this form assumes, in the order a reader checks them.
pub fn assumptions(form: &Form) -> Vec<Assumption> {
    let mut out = vec![Assumption::Stack { stack: form.stack }];
    if form.mode != Mode::Inference {
        out.extend([
            Assumption::Lengths {
                variable: form.variable_lengths,
            },
            Assumption::Loss { loss: form.loss },
            Assumption::Checkpointing {
                checkpointing: form.checkpointing,
            },
        ]);
    }
    out.push(Assumption::Attention {
        attention: form.attention,
    });
    out.push(Assumption::Versions);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snippet_measures_both_figures_and_quotes_the_prediction() {
        let s = snippet(&Form::default(), 21.4, 23.9);
        assert!(s.contains("reset_peak_memory_stats()"));
        assert!(s.contains("max_memory_allocated()") && s.contains("max_memory_reserved()"));
        assert!(s.contains("21.40") && s.contains("23.90"));
        let inf = snippet(
            &Form {
                mode: Mode::Inference,
                ..Form::default()
            },
            1.0,
            1.0,
        );
        assert!(inf.contains("generate("));
    }

    #[test]
    fn training_assumptions_name_their_settings() {
        let a = assumptions(&Form::default());
        let keys: Vec<&str> = a.iter().map(|x| x.key()).collect();
        for k in ["stack", "varlen", "loss", "ckpt", "attn"] {
            assert!(keys.contains(&k), "{k}");
            assert!(crate::settings::by_key(k).is_some(), "{k} is a setting");
        }
    }
}
