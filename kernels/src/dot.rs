//! Dot products for the vector index: f32 for exact scores, int8 for the
//! quantised scan and the HNSW graph's distances.
//!
//! Written like the row kernels: one plain body, compiled as is (portable)
//! and inside an `avx2,fma` function. Integer sums vectorise freely; the f32
//! sum keeps eight independent lanes (two accumulators each, to hide the
//! adds' latency) and uses `mul_add` only where FMA is there to make it one
//! instruction. Where an AVX-512 path runs on a CPU with VNNI, the int8 dot
//! products use `vpdpbusd` ([`vnni`]): a third of the instructions of the
//! widened multiply-adds the compiler makes of the plain body.

use super::Isa;

/// Lanes of the f32 partial sums: one AVX register.
const LANES: usize = 8;

#[inline(always)]
fn dot_f32_body<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut even = [0.0f32; LANES];
    let mut odd = [0.0f32; LANES];
    let (pairs_a, pairs_b) = (a.chunks_exact(2 * LANES), b.chunks_exact(2 * LANES));
    let (rest_a, rest_b) = (pairs_a.remainder(), pairs_b.remainder());
    for (x, y) in pairs_a.zip(pairs_b) {
        for l in 0..LANES {
            if FMA {
                even[l] = x[l].mul_add(y[l], even[l]);
                odd[l] = x[LANES + l].mul_add(y[LANES + l], odd[l]);
            } else {
                even[l] += x[l] * y[l];
                odd[l] += x[LANES + l] * y[LANES + l];
            }
        }
    }
    let tail: f32 = rest_a.iter().zip(rest_b).map(|(x, y)| x * y).sum();
    let mut total = tail;
    for l in 0..LANES {
        total += even[l] + odd[l];
    }
    total
}

#[inline(always)]
fn dot_i8_body(a: &[i8], b: &[i8]) -> i32 {
    // Each product fits i16 and 2^16 of them fit i32: exact for any length the index uses.
    a.iter().zip(b).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum()
}

#[inline(always)]
fn dot_i8_rows_body(query: &[i8], rows: &[i8], out: &mut [i32]) {
    let d = query.len();
    if d == 0 {
        out.iter_mut().for_each(|o| *o = 0);
        return;
    }
    for (row, o) in rows.chunks_exact(d).zip(out.iter_mut()) {
        *o = dot_i8_body(query, row);
    }
}

/// `a · b` over the shorter length.
pub fn dot_f32(isa: Isa, a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if isa.has_avx2() {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(a: &[f32], b: &[f32]) -> f32 {
            dot_f32_body::<true>(a, b)
        }
        // SAFETY: `has_avx2` paths are only chosen after the CPU was seen to have AVX2 and FMA.
        return unsafe { avx2(a, b) };
    }
    let _ = isa;
    dot_f32_body::<false>(a, b)
}

/// `a · b` of two int8 vectors, exactly, over the shorter length.
pub fn dot_i8(isa: Isa, a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if vnni::usable(isa) {
        // SAFETY: `usable` saw AVX-512 F, BW and VNNI on this CPU.
        return unsafe { vnni::dot(a, b) };
    }
    #[cfg(target_arch = "x86_64")]
    if isa.has_avx2() {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(a: &[i8], b: &[i8]) -> i32 {
            dot_i8_body(a, b)
        }
        // SAFETY: as in `dot_f32`.
        return unsafe { avx2(a, b) };
    }
    let _ = isa;
    dot_i8_body(a, b)
}

/// `out[i] = query · rows[i]` for consecutive rows of `query.len()` int8
/// values: the exact scan's inner loop, dispatched once per block.
pub fn dot_i8_rows(isa: Isa, query: &[i8], rows: &[i8], out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    if vnni::usable(isa) && !query.is_empty() {
        for (row, o) in rows.chunks_exact(query.len()).zip(out.iter_mut()) {
            // SAFETY: as above.
            *o = unsafe { vnni::dot(query, row) };
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if isa.has_avx2() {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(query: &[i8], rows: &[i8], out: &mut [i32]) {
            dot_i8_rows_body(query, rows, out)
        }
        // SAFETY: as in `dot_f32`.
        return unsafe { avx2(query, rows, out) };
    }
    let _ = isa;
    dot_i8_rows_body(query, rows, out)
}

/// int8 dot products on AVX-512 VNNI. `vpdpbusd` multiplies unsigned by
/// signed bytes, so `a` is shifted into 0..=255 (its sign bit flipped: `a + 128`)
/// and `128 · Σb`, summed by the same instruction against ones, is taken off.
/// Every sum is exact: 65,536 products of at most 255 · 128 fit an i32.
#[cfg(target_arch = "x86_64")]
mod vnni {
    use super::Isa;
    use std::arch::x86_64::*;

    /// Whether `isa` may use AVX-512 and this CPU has VNNI.
    #[inline]
    pub(super) fn usable(isa: Isa) -> bool {
        isa.has_avx512() && std::is_x86_feature_detected!("avx512vnni")
    }

    /// `a · b` over the shorter length.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) fn dot(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let flip = _mm512_set1_epi8(i8::MIN);
        let ones = _mm512_set1_epi8(1);
        let (mut products, mut sums) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        let mut at = 0;
        while at < n {
            let left = n - at;
            // The last block loads only what is left; masked-off bytes read as 0.
            let mask: __mmask64 = if left >= 64 { u64::MAX } else { (1u64 << left) - 1 };
            // SAFETY: the mask keeps both loads within `at..n` of slices at least `n` long.
            let (x, y) = unsafe {
                (
                    _mm512_maskz_loadu_epi8(mask, a.as_ptr().add(at).cast()),
                    _mm512_maskz_loadu_epi8(mask, b.as_ptr().add(at).cast()),
                )
            };
            products = _mm512_dpbusd_epi32(products, _mm512_xor_si512(x, flip), y);
            sums = _mm512_dpbusd_epi32(sums, ones, y);
            at += 64;
        }
        _mm512_reduce_add_epi32(_mm512_sub_epi32(products, _mm512_slli_epi32::<7>(sums)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::uniform;

    #[test]
    fn every_path_matches_a_plain_sum() {
        for n in [0, 1, 7, 16, 17, 384, 385] {
            let a = uniform(n, 1, 1.0);
            let b = uniform(n, 2, 1.0);
            let want: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let qa: Vec<i8> = a.iter().map(|x| (x * 127.0) as i8).collect();
            let qb: Vec<i8> = b.iter().map(|x| (x * -128.0) as i8).collect();
            let want_i8: i32 = qa.iter().zip(&qb).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
            for isa in Isa::available() {
                let got = dot_f32(isa, &a, &b);
                assert!((f64::from(got) - want).abs() < 1e-4, "{isa:?} n={n}: {got} vs {want}");
                assert_eq!(dot_i8(isa, &qa, &qb), want_i8, "{isa:?} n={n}");
                let rows: Vec<i8> = [qb.clone(), qa.clone(), qb.clone()].concat();
                let mut out = [0i32; 3];
                dot_i8_rows(isa, &qa, &rows, &mut out);
                let self_dot: i32 = qa.iter().map(|x| i32::from(*x) * i32::from(*x)).sum();
                assert_eq!(out, [want_i8, self_dot, want_i8], "{isa:?} n={n}");
            }
        }
    }

    #[test]
    fn extreme_int8_values_do_not_overflow() {
        let a = vec![-128i8; 4096];
        for isa in Isa::available() {
            assert_eq!(dot_i8(isa, &a, &a), 4096 * 128 * 128);
        }
    }

    #[test]
    fn long_rows_of_every_length_match_a_plain_sum() {
        for d in [63, 64, 65, 128, 384, 1000] {
            let q: Vec<i8> = uniform(d, 7, 1.0).iter().map(|x| (x * 127.0) as i8).collect();
            let mut rows: Vec<i8> = uniform(d * 5, 8, 1.0).iter().map(|x| (x * 128.0) as i8).collect();
            rows[..d].fill(i8::MIN);
            rows[d..2 * d].fill(i8::MAX);
            let want: Vec<i32> =
                rows.chunks(d).map(|r| q.iter().zip(r).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()).collect();
            for isa in Isa::available() {
                let mut out = vec![0i32; 5];
                dot_i8_rows(isa, &q, &rows, &mut out);
                assert_eq!(out, want, "{isa:?} d={d}");
            }
        }
    }

    #[test]
    fn unequal_lengths_use_the_shorter() {
        for isa in Isa::available() {
            assert_eq!(dot_f32(isa, &[1.0, 2.0, 3.0], &[1.0, 1.0]), 3.0);
            assert_eq!(dot_i8(isa, &[1, 2, 3], &[1, 1]), 3);
        }
    }
}
