//! The memory model: a [`Job`] in, an [`Estimate`] out. Pure Rust: no browser, no I/O.
//!
//! Each term lives in the file named after it, with its formula and source in a doc comment.

pub mod activations;
pub mod arch;
pub mod band;
pub mod estimate;
pub mod full_tuning;
pub mod job;
pub mod limits;
pub mod normalize;
pub mod peft;
pub mod preference;
pub mod recurrent;
pub mod serve;
pub mod stack;
pub mod vision;
pub mod weights;

pub use arch::{Architecture, AttentionKind, Biases, Mla, MlpKind, Moe, ParamCounts};
pub use band::{band, Band, BandKind};
pub use estimate::{
    estimate, Component, Estimate, HostComponent, Part, Phase, Warning, ALLOCATOR_FIXED_GIB,
    ALLOCATOR_TRANSIENT_SHARE, ALLOCATOR_VARIABLE_SHARE, CUDA_CONTEXT_GIB,
};
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
