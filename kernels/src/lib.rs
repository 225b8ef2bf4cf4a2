//! CPU kernels for ragbox's BERT encoder and vector index, picked once at run
//! time by what the CPU offers, with a portable path that builds and runs anywhere.

#![warn(missing_docs)]

pub mod dot;
pub mod gemm;
pub mod rows;

/// Deterministic inputs for the kernels' tests and benchmarks (not for production use).
#[doc(hidden)]
pub mod sample {
    /// `n` values spread evenly over `-half_width..half_width`, the same for the same `seed`.
    pub fn uniform(n: usize, seed: u64, half_width: f32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * half_width
            })
            .collect()
    }
}

/// Which code path the kernels take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// Plain Rust: the compiler's baseline vectors (SSE2 on x86-64, NEON on aarch64).
    Portable,
    /// 256-bit AVX2 with fused multiply-add.
    Avx2Fma,
}

impl Isa {
    /// The best path this CPU runs, unless `RAGBOX_KERNELS=portable` asks for the plain one.
    pub fn detect() -> Self {
        let best = Self::available().pop().unwrap_or(Self::Portable);
        match std::env::var("RAGBOX_KERNELS").as_deref() {
            Ok("portable") => Self::Portable,
            _ => best,
        }
    }

    /// Every path this CPU can run, slowest first (tests compare them all).
    pub fn available() -> Vec<Self> {
        #[allow(unused_mut)] // only x86-64 adds paths
        let mut paths = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            paths.push(Self::Avx2Fma);
        }
        paths
    }

    /// The path's name, as `ragbox model info` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Avx2Fma => "avx2+fma",
        }
    }
}

/// The CPU features that matter for the kernels, as `ragbox model info` and benchmarks report them.
pub fn cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut found = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($f:tt),*) => { $(if std::is_x86_feature_detected!($f) { found.push($f); })* };
        }
        probe!("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512bf16", "avx512vnni");
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        found.push("neon");
    }
    found
}
