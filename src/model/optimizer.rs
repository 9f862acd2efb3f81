//! Optimizer memory on the busiest GPU: states, the fp32 master copy and the step's temporaries.

use super::full_tuning;
use super::job::{Job, Mode, Optimizer, Precision};
use super::shapes::Shapes;

/// Optimizer state bytes per trainable parameter stepped in fp32, and whether they live in paged (managed)
/// memory.
///
/// AdamW: two fp32 moments, 8 B (Loshchilov & Hutter; torch `AdamW` `exp_avg`, `exp_avg_sq`). 16-bit states: 4 B.
/// bitsandbytes 8-bit Adam: two uint8 states + fp32 absmax per 2048-element block ≈ 2.004 B, only for
/// tensors of ≥ 4096 elements (`bnb.optim.Adam8bit`, `min_8bit_size`). Paged variants keep the same states in
/// CUDA managed memory that PyTorch's allocator does not count. SGD momentum and Lion: one buffer, 4 B.
/// Adafactor (HF default `beta1=None`): factored second moment, `rows + cols` floats per matrix ≈ 4·2/h B.
pub fn optimizer_bytes(job: &Job) -> (f64, bool) {
    let h = f64::from(job.arch.hidden.max(1));
    match job.optimizer {
        Optimizer::Adamw => (8.0, false),
        Optimizer::Adamw16 => (4.0, false),
        Optimizer::Adamw8bit => (2.0 + 8.0 / 2048.0, false),
        Optimizer::PagedAdamw => (8.0, true),
        Optimizer::PagedAdamw8bit => (2.0 + 8.0 / 2048.0, true),
        Optimizer::Adafactor => (8.0 / h, false),
        Optimizer::SgdMomentum | Optimizer::Lion => (4.0, false),
        Optimizer::Sgd | Optimizer::None | Optimizer::Lomo => (0.0, false),
        // GaLore/APOLLO: full AdamW for what they do not project (embeddings, norms, LM head); the decoder
        // weights' projected states are counted in `optimizer` (`full_tuning::projected_state_elements`).
        Optimizer::Galore | Optimizer::Apollo => (8.0, false),
        // Q-GaLore: bitsandbytes' 8-bit Adam (`bnb.optim.Adam8bit`) for what it does not project.
        Optimizer::QGalore => (2.0 + 8.0 / 2048.0, false),
        // Adam-mini keeps Adam's first moment and one second-moment value per block (a head, a neuron):
        // Zhang et al. 2024, sec. 2; the second moment is negligible.
        Optimizer::AdamMini => (4.0, false),
        // AdaLomo: Adafactor's factored second moment, no first moment (Lv et al. 2023, "AdaLomo").
        Optimizer::AdaLomo => (8.0 / h, false),
    }
}

/// Optimizer state bytes per trainable parameter when the optimizer steps 16-bit parameters directly (pure
/// 16-bit training, no fp32 master copy).
///
/// torch optimizers create their states with `torch.zeros_like(p)` (`torch/optim/adamw.py` `_init_group`,
/// `sgd.py`, HF `Adafactor` `.to(grad)`), so the moments take the parameter's dtype: AdamW's two moments are
/// 2 × 2 B on bf16 weights, half the fp32 figure. bitsandbytes' 8-bit states are uint8 whatever the
/// parameter dtype, so they do not shrink.
pub fn optimizer_bytes_16bit(job: &Job) -> f64 {
    let (fp32, _) = optimizer_bytes(job);
    match job.optimizer {
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit | Optimizer::QGalore => fp32,
        Optimizer::Adamw16 => 4.0,
        _ => fp32 / 2.0,
    }
}

/// A job's optimizer memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OptimizerBytes {
    /// State bytes per fp32-stepped parameter (adapters), from [`optimizer_bytes`].
    pub per_param: f64,
    /// State bytes per trained base parameter: [`optimizer_bytes_16bit`] when 16-bit weights are stepped
    /// directly, else `per_param`.
    pub base_per_param: f64,
    /// The states live in paged (CUDA managed) memory, outside PyTorch's allocator.
    pub paged: bool,
    /// The fp32 master copy of the trained base weights, whole (before any sharding or offload).
    pub master_whole: f64,
    /// The master copy on the busiest GPU.
    pub master: f64,
    /// Optimizer states on the busiest GPU, paged or not.
    pub states: f64,
    /// The optimizer step's temporaries.
    pub step_temp: f64,
}

impl OptimizerBytes {
    /// States held by PyTorch's allocator (not paged).
    pub fn states_allocated(&self) -> f64 {
        if self.paged {
            0.0
        } else {
            self.states
        }
    }

    /// States in paged memory.
    pub fn states_paged(&self) -> f64 {
        if self.paged {
            self.states
        } else {
            0.0
        }
    }
}

/// The optimizer's memory on the busiest GPU.
///
/// - States: adapters at [`optimizer_bytes`], trained base weights at `base_per_param`; GaLore/APOLLO keep
///   projected states for the decoder's linear weights (`full_tuning::projected_state_elements`) and full
///   ones for the rest. ZeRO-1 shards them, pipeline/tensor parallelism divide them with the layers,
///   offload moves them to the host.
/// - Master copy: a separate fp32 copy exists when the working weights are 16-bit but the run is mixed
///   precision (DeepSpeed/FSDP mixed precision: the optimizer holds fp32 params). BAdam converts the active
///   block to fp32 and steps that copy (Luo et al. 2024, sec. 3: "the active block is kept in FP32"),
///   whatever the precision of the rest.
/// - Step temporaries: PyTorch's foreach AdamW allocates one parameter-sized list in the parameter dtype
///   during `step()`; GaLore steps weight by weight and peaks at the SVD of the largest gradient when the
///   projector is refreshed (`full_tuning::svd_transient_bytes`); an update fused into backward (LOMO,
///   optimizer in backward) and an offloaded step have none on the GPU.
pub fn optimizer(job: &Job, s: &Shapes) -> OptimizerBytes {
    let p = &s.params;
    let base_trainable = s.base_trainable();
    let (per_param, paged) = optimizer_bytes(job);
    // Adapters in a 16-bit model dtype (`adapters::adapter_param_bytes`) are stepped as 16-bit parameters.
    let adapter_in_16bit = super::adapters::adapter_param_bytes(job, s) < 4.0;
    // BAdam steps an fp32 copy of the active block (`badam/block_optim.py`: `param.clone().float()`), so
    // its Adam states are fp32 whatever the weights.
    let base_per_param =
        if job.precision == Precision::Pure16 && s.working < 4.0 && job.mode != Mode::Badam {
            optimizer_bytes_16bit(job)
        } else {
            per_param
        };
    let adapter_per_param = if adapter_in_16bit {
        optimizer_bytes_16bit(job)
    } else {
        per_param
    };
    let master_whole = if (job.precision == Precision::Mixed || job.mode == Mode::Badam)
        && s.working < 4.0
        && base_trainable > 0.0
    {
        base_trainable * 4.0
    } else {
        0.0
    };
    let factored = matches!(job.optimizer, Optimizer::Adafactor | Optimizer::AdaLomo);
    let base_states = if factored && base_trainable > 0.0 {
        // Factored second moments, exactly: AdaLomo keeps them in fp32; HF Adafactor in the gradient's dtype.
        let bytes = if job.optimizer == Optimizer::AdaLomo {
            4.0
        } else {
            super::gradients::grad_bytes(job)
        };
        let whole = p.total.max(1.0);
        full_tuning::factored_state_elements(&job.arch, p)
            * (base_trainable / whole).min(1.0)
            * bytes
    } else if full_tuning::is_projected(job.optimizer) && base_trainable > 0.0 {
        let state_bytes = if job.optimizer == Optimizer::QGalore {
            full_tuning::Q_GALORE_STATE_BYTES
        } else {
            base_per_param / 2.0 // one moment's bytes per element
        };
        let projected =
            full_tuning::projected_state_elements(&job.arch, job.projection_rank, job.optimizer);
        let decoder_linear = p.linear.min(base_trainable);
        (base_trainable - decoder_linear) * base_per_param + projected * state_bytes
    } else {
        base_trainable * base_per_param
    };
    let (states, master) = if s.optimizer_offloaded {
        (0.0, 0.0)
    } else {
        (
            (s.adapter * adapter_per_param + base_states) * s.shard(1) * s.train_share,
            master_whole * s.shard(1) * s.train_share,
        )
    };
    let step_temp = if full_tuning::fused_update(job) || !job.is_training() || s.optimizer_offloaded
    {
        0.0
    } else if full_tuning::uses_svd(job.optimizer) && base_trainable > 0.0 {
        full_tuning::svd_transient_bytes(p, &job.arch)
    } else if job.optimizer_step_temp && !matches!(job.optimizer, Optimizer::None | Optimizer::Sgd)
    {
        let param_bytes = if s.adapter > 0.0 {
            super::adapters::adapter_param_bytes(job, s)
        } else {
            s.working
        };
        s.trainable * param_bytes * s.shard(1) * s.train_share
    } else {
        0.0
    };
    OptimizerBytes {
        per_param,
        base_per_param,
        paged,
        master_whole,
        master,
        states,
        step_temp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(optimizer: Optimizer, precision: Precision) -> (Job, Shapes) {
        let job = Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode: Mode::Full,
            optimizer,
            precision,
            ..Job::default()
        };
        let s = Shapes::of(&job);
        (job, s)
    }

    /// Pure bf16 AdamW on bf16 weights: two bf16 moments (4 B) and one bf16 foreach temporary (2 B) per
    /// parameter, no master copy.
    #[test]
    fn pure_bf16_adamw() {
        let (job, s) = full(Optimizer::Adamw, Precision::Pure16);
        let o = optimizer(&job, &s);
        let n = s.params.total;
        assert_eq!(o.states, 4.0 * n);
        assert_eq!(o.step_temp, 2.0 * n);
        assert_eq!(o.master, 0.0);
    }

    /// Paged 8-bit AdamW: 2 + 8/2048 B per parameter, all of it outside the allocator.
    #[test]
    fn paged_8bit_states_are_paged() {
        let (job, s) = full(Optimizer::PagedAdamw8bit, Precision::Pure16);
        let o = optimizer(&job, &s);
        assert_eq!(o.states_paged(), (2.0 + 8.0 / 2048.0) * s.params.total);
        assert_eq!(o.states_allocated(), 0.0);
    }

    /// SGD without momentum keeps nothing and allocates nothing at the step.
    #[test]
    fn plain_sgd_is_free() {
        let (job, s) = full(Optimizer::Sgd, Precision::Pure16);
        let o = optimizer(&job, &s);
        assert_eq!((o.states, o.step_temp, o.master), (0.0, 0.0, 0.0));
    }
}
