//! CPU kernels for ragbox's BERT encoder and vector index, picked once at run
//! time by what the CPU offers, with a portable path that builds and runs anywhere.

#![warn(missing_docs)]

/// Columns of a packed bf16 panel of B, which the bf16 product's AVX-512
/// path and its AMX path both read: one definition, below both.
const BF16_PANEL: usize = 32;

mod amx;
pub mod attention;
pub mod bf16;
pub mod buf;
pub mod dot;
pub mod gemm;
pub mod int8;
pub mod rows;
#[doc(hidden)]
pub mod sample;
pub mod scratch;

/// Which code path the kernels take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// Plain Rust: the compiler's baseline vectors (SSE2 on x86-64, NEON on aarch64).
    Portable,
    /// 256-bit AVX2 with fused multiply-add.
    Avx2Fma,
    /// [`Isa::Avx2Fma`], with the encoder's weight products in bfloat16 with
    /// f32 sums (AVX-512 BF16's `vdpbf16ps`, twice the multiply-adds of an
    /// f32 FMA per instruction).
    Avx512Bf16,
    /// [`Isa::Avx512Bf16`], with the encoder's attention input product and
    /// first feed-forward product in 8-bit integers (AVX-512 VNNI's
    /// `vpdpbusd`, twice `vdpbf16ps`'s multiply-adds), their inputs smoothed
    /// ([`int8::Packed::smoothed`]): within the 0.999 cosine to f32 a default
    /// path keeps (bench/results/precision.md).
    Avx512Int8,
    /// [`Isa::Avx512Bf16`], with the encoder's weight products on Intel AMX
    /// tiles (`tdpbf16ps`: 8,192 bf16 multiply-adds an instruction, the same
    /// rounding and f32 sums), where the CPU has AMX-BF16 and the OS grants its
    /// state; no int8 product, which the tiles' bf16 outruns.
    AmxBf16,
}

impl Isa {
    /// The best default path this CPU runs, unless `RAGBOX_KERNELS` names
    /// another (`portable`; `avx2` for f32 products on a CPU with BF16; `bf16`
    /// for no int8 product on a CPU with VNNI; `int8` for AVX-512 instead of AMX).
    pub fn detect() -> Self {
        // Every path keeps within 0.999 cosine of f32 on every text measured: the fastest is the best.
        let paths = Self::available();
        let best = paths.last().copied().unwrap_or(Self::Portable);
        let asked = std::env::var("RAGBOX_KERNELS").ok();
        asked.and_then(|name| paths.into_iter().find(|p| p.short_name() == name)).unwrap_or(best)
    }

    /// Every path this CPU can run, slowest first (tests compare them all).
    pub fn available() -> Vec<Self> {
        #[allow(unused_mut)] // only x86-64 adds paths
        let mut paths = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            paths.push(Self::Avx2Fma);
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512bf16")
            {
                paths.push(Self::Avx512Bf16);
                if std::is_x86_feature_detected!("avx512vnni") {
                    paths.push(Self::Avx512Int8);
                }
                if amx::available() {
                    paths.push(Self::AmxBf16);
                }
            }
        }
        paths
    }

    /// Whether the f32 kernels take their AVX2 + FMA code.
    pub fn has_avx2(self) -> bool {
        matches!(self, Self::Avx2Fma | Self::Avx512Bf16 | Self::Avx512Int8 | Self::AmxBf16)
    }

    /// Whether the path may use AVX-512 F and BW (every AVX-512 path).
    pub fn has_avx512(self) -> bool {
        matches!(self, Self::Avx512Bf16 | Self::Avx512Int8 | Self::AmxBf16)
    }

    /// Whether the encoder's weight products run in bfloat16 ([`bf16`]).
    pub fn has_bf16(self) -> bool {
        matches!(self, Self::Avx512Bf16 | Self::Avx512Int8 | Self::AmxBf16)
    }

    /// Whether the bf16 weight products run on AMX tiles ([`Isa::AmxBf16`]).
    pub fn has_amx(self) -> bool {
        self == Self::AmxBf16
    }

    /// Whether the encoder's first feed-forward product runs in 8-bit integers ([`int8`]).
    pub fn has_int8(self) -> bool {
        self == Self::Avx512Int8
    }

    /// The name `RAGBOX_KERNELS` takes for this path.
    pub fn short_name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Avx2Fma => "avx2",
            Self::Avx512Bf16 => "bf16",
            Self::Avx512Int8 => "int8",
            Self::AmxBf16 => "amx",
        }
    }

    /// The path's name, as `ragbox model info` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Avx2Fma => "avx2+fma",
            Self::Avx512Bf16 => "avx512-bf16",
            Self::Avx512Int8 => "avx512-bf16+int8",
            Self::AmxBf16 => "amx-bf16",
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
        if amx::available() {
            found.push("amx-bf16");
        }
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        found.push("neon");
    }
    found
}

/// The path's multiply-add rate with no memory traffic: independent chains of
/// its widest instruction on every thread of the pool, in GFLOP/s (benchmarks
/// report each product's share of it; not for production use).
#[doc(hidden)]
pub mod peak {
    use super::Isa;
    use rayon::prelude::*;
    use std::time::Instant;

    /// Best of five timed rounds of `rounds` steps on every pool thread.
    pub fn gflops(isa: Isa) -> f64 {
        const ROUNDS: usize = 20_000_000;
        let threads = rayon::current_num_threads();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let started = Instant::now();
            let flop: f64 = (0..threads).into_par_iter().map(|_| chains(isa, ROUNDS)).sum();
            best = best.min(started.elapsed().as_secs_f64());
            std::hint::black_box(flop);
        }
        per_step(isa) * (threads * ROUNDS) as f64 / best / 1e9
    }

    /// FLOPs of one step of [`chains`].
    fn per_step(isa: Isa) -> f64 {
        match isa {
            // 4 chains of 16 × 16 sums of 16 bf16 pairs per 16 steps.
            Isa::AmxBf16 => 4.0 * 16.0 * 16.0 * 32.0 * 2.0 / 16.0,
            // 12 chains of 16 byte quads (64 multiply-adds) per instruction.
            Isa::Avx512Int8 => 12.0 * 128.0,
            // 12 chains of 16 bf16 pairs (32 multiply-adds) per instruction.
            Isa::Avx512Bf16 => 12.0 * 64.0,
            // 12 chains of 8-lane FMAs.
            Isa::Avx2Fma => 12.0 * 16.0,
            // 12 chains of a multiply and an add each.
            Isa::Portable => 12.0 * 2.0,
        }
    }

    fn chains(isa: Isa, rounds: usize) -> f64 {
        #[cfg(target_arch = "x86_64")]
        {
            if isa.has_amx() {
                return super::amx::peak(rounds);
            }
            // SAFETY: each path is only chosen after the CPU was seen to have its features.
            if isa.has_int8() {
                return unsafe { x86::int8(rounds) };
            }
            if isa.has_bf16() {
                return unsafe { x86::bf16(rounds) };
            }
            if isa.has_avx2() {
                return unsafe { x86::fma(rounds) };
            }
        }
        let _ = isa;
        let mut acc = [0.0f32; 12];
        for i in 0..rounds {
            let x = std::hint::black_box(i as f32 * 1e-9);
            acc.iter_mut().for_each(|a| *a = *a * 0.999 + x);
        }
        acc.iter().sum::<f32>() as f64
    }

    #[cfg(target_arch = "x86_64")]
    mod x86 {
        use std::arch::x86_64::*;

        #[target_feature(enable = "avx2,fma")]
        pub(super) unsafe fn fma(rounds: usize) -> f64 {
            let (m, x) = (_mm256_set1_ps(0.999), _mm256_set1_ps(1e-9));
            let mut acc = [_mm256_setzero_ps(); 12];
            for _ in 0..rounds {
                for a in acc.iter_mut() {
                    *a = _mm256_fmadd_ps(*a, m, x);
                }
            }
            let mut out = [0.0f32; 8];
            // SAFETY: `out` holds 8 values.
            unsafe {
                _mm256_storeu_ps(out.as_mut_ptr(), acc.iter().fold(_mm256_setzero_ps(), |s, a| _mm256_add_ps(s, *a)))
            };
            out.iter().sum::<f32>() as f64
        }

        #[target_feature(enable = "avx512f,avx512vnni")]
        pub(super) unsafe fn int8(rounds: usize) -> f64 {
            let (a, b) = (_mm512_set1_epi8(3), _mm512_set1_epi8(-2));
            let mut acc = [_mm512_setzero_si512(); 12];
            for _ in 0..rounds {
                for s in acc.iter_mut() {
                    *s = _mm512_dpbusd_epi32(*s, a, b);
                }
            }
            acc.iter().map(|s| _mm512_reduce_add_epi32(*s) as f64).sum()
        }

        #[target_feature(enable = "avx512f,avx512bf16")]
        pub(super) unsafe fn bf16(rounds: usize) -> f64 {
            let (a, b) = (_mm512_set1_ps(0.5), _mm512_set1_ps(1e-3));
            let pairs = _mm512_cvtne2ps_pbh(a, b);
            let mut acc = [_mm512_setzero_ps(); 12];
            for _ in 0..rounds {
                for s in acc.iter_mut() {
                    *s = _mm512_dpbf16_ps(*s, pairs, pairs);
                }
            }
            acc.iter().map(|s| _mm512_reduce_add_ps(*s)).sum::<f32>() as f64
        }
    }
}
