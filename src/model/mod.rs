//! The memory model: a [`Job`] in, an [`Estimate`] out. Pure Rust: no browser, no I/O.
//!
//! A pipeline (see [`estimate`]): [`shapes`] → one file per term, each with its formula and source in a doc
//! comment ([`weights`], [`adapters`], [`gradients`], [`optimizer`], [`activations`], [`loss`], [`cache`],
//! [`temporaries`], [`vision`], [`side_models`]) → a [`timeline`] of the step → the [`allocator`]'s totals
//! and [`host`] RAM.

pub mod activations;
pub mod adapters;
pub mod alloc_program;
pub mod allocator;
pub mod arch;
pub mod band;
pub mod cache;
pub mod caching_allocator;
pub mod estimate;
pub mod full_tuning;
pub mod gradients;
pub mod host;
pub mod job;
pub mod limits;
pub mod loss;
pub mod normalize;
pub mod optimizer;
pub mod peft;
pub mod preference;
pub mod recurrent;
pub mod serve;
pub mod shapes;
pub mod side_models;
pub mod stack;
pub mod temporaries;
pub mod timeline;
pub mod vision;
pub mod weights;

pub use allocator::{ALLOCATOR_FIXED_GIB, ALLOCATOR_TRANSIENT_SHARE, ALLOCATOR_VARIABLE_SHARE};
pub use arch::{
    Activation, Architecture, AttentionKind, Biases, ExpertAdapters, Fused, Mla, MlpKind, Moe,
    ParamCounts,
};
pub use band::{band, Band, BandKind};
pub use estimate::{
    block_replay, estimate, BlockReplay, Component, Estimate, HostComponent, Part, Phase, Warning,
    CUDA_CONTEXT_GIB,
};
pub use host::HOST_RUNTIME_GIB;
pub use job::{
    AttentionImpl, Checkpointing, FrozenSharding, Inference, Job, KvDtype, Lora, LossImpl, Mode,
    Module, Offload, OffloadDevice, Optimizer, Parallelism, Precision, Version, Versions,
    WeightFormat,
};
pub use recurrent::{Hybrid, Mixer};
pub use serve::{
    fewest_gpus, max_model_len_for_users, plan as serve_plan, Engine, KvLayout, ModelDtype,
    ServeKvDtype, ServePlan, ServeRequest,
};
pub use stack::Stack;
pub use vision::{VisionFamily, VisionSettings, VisionTower};

/// A catalog model's architecture, for the terms' table tests.
#[cfg(test)]
pub(crate) fn catalog_arch(id: &str) -> Architecture {
    crate::catalog::model(id)
        .unwrap_or_else(|| panic!("{id} is not in the catalog"))
        .arch()
        .clone()
}
