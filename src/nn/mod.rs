//! The layers every family builds from: [`attention`] (the one attention layer with its KV
//! cache, the only code that records what the [`probe`] asks for) and [`layers`] (Linear,
//! LayerNorm, RMSNorm); [`progress`] tells a caller which attention call a long forward has
//! finished;
//! [`score_parts`] splits the traced head's scores into where they come from. A family's own file arranges them as its PyTorch modules do.

pub mod attention;
pub mod layers;
pub mod probe;
pub mod progress;
pub mod score_parts;
