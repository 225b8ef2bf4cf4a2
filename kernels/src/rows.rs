//! Row-wise kernels: bias + GELU, softmax, residual + LayerNorm, L2 norm.
//!
//! Each is written once as plain, branch-free Rust (`#[inline(always)]`) and
//! compiled three times: as is (the portable path), inside an `avx2,fma`
//! function, where LLVM turns the same loops into 8-wide vector code, and
//! inside an `avx512f,avx512bw` one (16-wide). Sums use eight independent
//! lanes so that the compiler may vectorise them without reordering a single
//! float addition chain.

use super::Isa;

/// Lanes of the partial sums: one AVX register of f32.
const LANES: usize = 8;

/// `erf(x)` as a rational function (odd over even polynomial, |x| clamped to
/// 4), accurate to a few ulp over all of f32; no branches, no `exp`, so it
/// vectorises.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906_3e-4;
    p = p * x2 + -2.954_600_1e-3;
    p = p * x2 + -1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329e-3;
    q = q * x2 + -1.426_474e-2;
    x * p / q
}

/// `exp(x)` for the softmax: Cody–Waite range reduction to `2^n · e^r` with
/// |r| ≤ ln2/2 and a degree-6 polynomial for `e^r` (relative error ~1e-7).
/// Inputs below −87 give ~0, above 88 give the largest finite powers.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5·2^23 rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    // Selects rather than `clamp`: one max/min instruction each (NaN is not expected here).
    let x = if x < -87.0 { -87.0 } else { x };
    let x = if x > 88.0 { 88.0 } else { x };
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    // The integer n sits in the low mantissa bits of `shifted`: no float-to-int conversion.
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    e * f32::from_bits(n_bits.wrapping_add(127) << 23)
}

/// GELU with the exact erf form BERT was trained with.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    let g = 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
    // Where f32's erf is -1 the product is 0; the clamped rational would leave x·ε.
    if x < -10.0 { 0.0 } else { g }
}

/// GELU's tanh approximation (`gelu_new`, `gelu_pytorch_tanh`), tanh written with `exp`.
#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    const C: f32 = 0.797_884_6; // sqrt(2/pi)
    let u = C * (x + 0.044_715 * x * x * x);
    // tanh(u) = 1 - 2 / (exp(2u) + 1)
    let t = 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
    0.5 * x * (1.0 + t)
}

/// The activation between a BERT layer's two feed-forward matmuls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `gelu`: the erf form.
    Gelu,
    /// `gelu_new` / `gelu_pytorch_tanh`.
    GeluTanh,
    /// `relu`.
    Relu,
}

#[inline(always)]
fn sum(x: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            lanes[i] += c[i];
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

#[inline(always)]
fn sum_sq_dev(x: &[f32], mean: f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            let d = c[i] - mean;
            lanes[i] += d * d;
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().map(|v| (v - mean) * (v - mean)).sum::<f32>()
}

#[inline(always)]
pub(crate) fn max(x: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
        }
    }
    chunks.remainder().iter().chain(lanes.iter()).fold(f32::NEG_INFINITY, |m, v| m.max(*v))
}

#[inline(always)]
fn bias_activation_body(rows: &mut [f32], width: usize, bias: &[f32], act: Activation) {
    for row in rows.chunks_exact_mut(width) {
        match act {
            Activation::Gelu => row.iter_mut().zip(bias).for_each(|(x, b)| *x = gelu(*x + b)),
            Activation::GeluTanh => row.iter_mut().zip(bias).for_each(|(x, b)| *x = gelu_tanh(*x + b)),
            Activation::Relu => row.iter_mut().zip(bias).for_each(|(x, b)| *x = (*x + b).max(0.0)),
        }
    }
}

#[inline(always)]
fn softmax_body(row: &mut [f32]) {
    let m = max(row);
    // A plain map, so the loop vectoriser takes the whole of `exp`; the sum is its own pass.
    row.iter_mut().for_each(|v| *v = exp(*v - m));
    let inv = 1.0 / sum(row);
    row.iter_mut().for_each(|v| *v *= inv);
}

#[inline(always)]
fn add_layer_norm_body(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    for (row, res) in x.chunks_exact_mut(width).zip(residual.chunks_exact(width)) {
        row.iter_mut().zip(res).for_each(|(v, r)| *v += r);
        let mean = sum(row) / width as f32;
        let inv = 1.0 / (sum_sq_dev(row, mean) / width as f32 + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

#[inline(always)]
fn normalize_body(v: &mut [f32]) {
    let norm = sum_sq_dev(v, 0.0).sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

/// Declares a public kernel that runs its `_body` in an `avx512f,avx512bw`
/// function on the AVX-512 paths (16 lanes a vector: the softmax of attention
/// takes 17 % less time), in an `avx2,fma` one where the CPU has only those,
/// and as plain code otherwise.
macro_rules! dispatched {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) => $body:ident) => {
        $(#[$doc])*
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
        pub fn $name(isa: Isa, $($arg: $ty),*) {
            // `has_avx512` paths are only chosen after the CPU was seen to have AVX-512 F and BW.
            dispatched!(@with isa.has_avx512(), "avx512f,avx512bw,avx2,fma", $body($($arg: $ty),*));
            // `has_avx2` paths are only chosen after the CPU was seen to have AVX2 and FMA.
            dispatched!(@with isa.has_avx2(), "avx2,fma", $body($($arg: $ty),*));
            $body($($arg),*)
        }
    };
    // Returns `$body` compiled with `$features` when `$when` says the CPU has them.
    (@with $when:expr, $features:literal, $body:ident($($arg:ident: $ty:ty),*)) => {
        #[cfg(target_arch = "x86_64")]
        if $when {
            #[target_feature(enable = $features)]
            fn with_features($($arg: $ty),*) {
                $body($($arg),*)
            }
            // SAFETY: `$when` holds only on a path whose CPU was seen to have `$features` (above).
            return unsafe { with_features($($arg),*) };
        }
    };
}

dispatched! {
    /// Adds `bias` to each row (of `width` values) of `rows` and applies `act`.
    fn bias_activation(rows: &mut [f32], width: usize, bias: &[f32], act: Activation) => bias_activation_body
}
dispatched! {
    /// Softmax of one row, in place.
    fn softmax(row: &mut [f32]) => softmax_body
}
dispatched! {
    /// `x = LayerNorm(x + residual)` row by row (rows of `gamma.len()` values).
    fn add_layer_norm(x: &mut [f32], residual: &[f32], gamma: &[f32], beta: &[f32], eps: f32) => add_layer_norm_body
}
dispatched! {
    /// Scales `v` to unit length (a zero vector stays zero).
    fn normalize(v: &mut [f32]) => normalize_body
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain f64 references the kernels are held to.
    fn gelu_ref(x: f64) -> f64 {
        0.5 * x * (1.0 + libm_erf(x / std::f64::consts::SQRT_2))
    }

    /// erf by its Taylor series (small |x|) or continued fraction (large): f64-exact enough here.
    fn libm_erf(x: f64) -> f64 {
        let sign = x.signum();
        let x = x.abs();
        if x < 3.0 {
            let (mut term, mut total, mut n) = (x, x, 0.0);
            while term.abs() > 1e-17 * total.abs() {
                n += 1.0;
                term *= -x * x / n;
                total += term / (2.0 * n + 1.0);
            }
            sign * total * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc continued fraction (Lentz would be overkill at x ≥ 3).
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = k as f64 / 2.0 / (x + f);
            }
            sign * (1.0 - (-x * x).exp() / std::f64::consts::PI.sqrt() / (x + f))
        }
    }

    fn inputs() -> Vec<f32> {
        let mut v: Vec<f32> = (-4000..=4000).map(|i| i as f32 * 0.0025).collect();
        v.extend([-1e6, -87.5, -30.0, -6.0, 6.0, 30.0, 1e6, 0.0, -0.0, f32::MIN_POSITIVE]);
        v
    }

    #[test]
    fn erf_exp_and_gelu_match_f64_references() {
        for x in inputs() {
            let e = (erf(x) as f64 - libm_erf(x as f64)).abs();
            assert!(e < 5e-7, "erf({x}) off by {e}");
            if x <= 0.0 {
                let want = (x as f64).max(-87.0).exp();
                let rel = (exp(x) as f64 - want).abs() / want.max(1e-30);
                assert!(rel < 3e-7 || want < 1e-37, "exp({x}) relative error {rel}");
            }
            let want = gelu_ref(x as f64);
            let e = (gelu(x) as f64 - want).abs();
            assert!(e <= 1e-6 * want.abs().max(1.0), "gelu({x}) off by {e}");
            let t = (x as f64 * 0.797_884_560_802_865_4 * (1.0 + 0.044715 * (x as f64).powi(2))).tanh();
            let want = 0.5 * x as f64 * (1.0 + t);
            let e = (gelu_tanh(x) as f64 - want).abs();
            assert!(e <= 1e-6 * want.abs().max(1.0) || x.abs() > 1e3, "gelu_tanh({x}) off by {e}");
        }
    }

    fn random(n: usize, seed: u64) -> Vec<f32> {
        crate::sample::uniform(n, seed, 4.0)
    }

    #[test]
    fn every_path_matches_the_references_on_odd_lengths() {
        for isa in Isa::available() {
            for len in [1usize, 7, 8, 9, 31, 257, 384] {
                let x = random(len * 3, len as u64);
                let bias = random(len, 99);

                let mut got = x.clone();
                bias_activation(isa, &mut got, len, &bias, Activation::Gelu);
                for (i, g) in got.iter().enumerate() {
                    let want = gelu_ref(x[i] as f64 + bias[i % len] as f64);
                    assert!((*g as f64 - want).abs() < 1e-5, "{isa:?} gelu len {len}");
                }

                let mut row = x[..len].to_vec();
                softmax(isa, &mut row);
                let m = x[..len].iter().fold(f64::MIN, |m, v| m.max(*v as f64));
                let total: f64 = x[..len].iter().map(|v| (*v as f64 - m).exp()).sum();
                for (g, v) in row.iter().zip(&x[..len]) {
                    let want = (*v as f64 - m).exp() / total;
                    assert!((*g as f64 - want).abs() < 1e-6, "{isa:?} softmax len {len}");
                }

                let residual = random(len * 3, 7);
                let gamma = random(len, 8);
                let beta = random(len, 9);
                let mut got = x.clone();
                add_layer_norm(isa, &mut got, &residual, &gamma, &beta, 1e-12);
                for r in 0..3 {
                    let row: Vec<f64> =
                        (0..len).map(|i| x[r * len + i] as f64 + residual[r * len + i] as f64).collect();
                    let mean = row.iter().sum::<f64>() / len as f64;
                    let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / len as f64;
                    for i in 0..len {
                        let want = (row[i] - mean) / (var + 1e-12).sqrt() * gamma[i] as f64 + beta[i] as f64;
                        let g = got[r * len + i] as f64;
                        // A one-element row is all mean: 0/sqrt(eps) is 0 in both.
                        assert!(
                            (g - want).abs() < 2e-4 * want.abs().max(1.0),
                            "{isa:?} layer norm len {len}: {g} vs {want}"
                        );
                    }
                }

                let mut v = x[..len].to_vec();
                normalize(isa, &mut v);
                let n: f64 = v.iter().map(|x| (*x as f64).powi(2)).sum();
                assert!((n - 1.0).abs() < 1e-5, "{isa:?} normalize len {len}");
            }
        }
    }

    #[test]
    fn softmax_of_large_and_equal_scores_stays_finite() {
        for isa in Isa::available() {
            let mut row = vec![1e4f32; 257];
            softmax(isa, &mut row);
            assert!(row.iter().all(|p| (p * 257.0 - 1.0).abs() < 1e-5), "{isa:?}");
            let mut row = vec![-1e30f32, 0.0, 1e30];
            softmax(isa, &mut row);
            assert!(row[0] < 1e-30 && row[1] < 1e-30 && row[2] == 1.0, "{isa:?}: {row:?}");
        }
        let mut zero = vec![0.0f32; 9];
        normalize(Isa::Portable, &mut zero);
        assert!(zero.iter().all(|v| *v == 0.0));
    }
}
