//! Scaled dot-product attention for one head of one sequence:
//! `out = softmax(Q · Kᵀ) · V`, Q already scaled.
//!
//! On a CPU with AVX-512 BF16 both products run on [`bf16`]'s micro-kernel,
//! called directly on operands packed here: K's rows are already the pairs
//! of depth `vdpbf16ps` reads once transposed into panels of keys, and V is
//! packed as pairs of consecutive rows, so neither product goes through the
//! general loop nest (a head's products are too small for its blocking and
//! thread split to pay); where the CPU has AMX, both run on its tiles
//! ([`amx`]), the keys padded to whole tiles of depth. The scores stay f32;
//! each row's exponentials are rounded to bfloat16 as they are made (one pass
//! after the maximum), and the row is divided by their sum after the second
//! product, on its `dh` values instead of its `len` probabilities. Elsewhere
//! both products run on [`gemm`]'s f32 kernel.

use super::Isa;
use super::amx;
use super::bf16;
use super::gemm::{self, Epilogue, Packed};
use super::rows;
use super::scratch;
use std::cell::RefCell;

/// Buffers one thread reuses from head to head (grown, until [`release_thread`]).
#[derive(Default)]
struct Scratch {
    /// Q's rows as bf16 pairs.
    q: Vec<u32>,
    /// K packed into panels of keys (bf16).
    k: Vec<u32>,
    /// V packed into panels of pairs of rows (bf16).
    v: Vec<u32>,
    /// The probabilities as bf16 pairs.
    p: Vec<u32>,
    /// Scores, then probabilities (f32), padded to whole tiles.
    scores: Vec<f32>,
    /// The product P · V, padded to whole tiles (bf16).
    out: Vec<f32>,
    /// Per row, 1 / the sum of its exponentials.
    inv: Vec<f32>,
    /// K or V packed for the f32 path.
    packed: Packed,
}

thread_local! {
    // Nothing `head` calls runs other work on this thread, so one borrow at a time.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// One head of one sequence: `q`, `k` and `v` hold `len` rows at stride `ld`,
/// the head's `dh` values first in each: f32 values, or (`T = u32`, a
/// [`PairedHead`]) bfloat16 pairs, two values a word.
#[derive(Clone, Copy)]
pub struct Head<'a, T = f32> {
    /// Queries, already scaled.
    pub q: &'a [T],
    /// Keys.
    pub k: &'a [T],
    /// Values.
    pub v: &'a [T],
    /// Row stride of `q`, `k` and `v`, in `T`s.
    pub ld: usize,
    /// Tokens.
    pub len: usize,
    /// The head's width, in values.
    pub dh: usize,
}

/// [`Head`] with Q, K and V already rounded to bfloat16 pairs (a product's
/// output, rounded as it was made): each row holds `dh / 2` words; `dh` is even.
pub type PairedHead<'a> = Head<'a, u32>;

/// `out = softmax(Q · Kᵀ) · V` for one head: `out` receives `len` rows of `dh` at stride `ldo`.
pub fn head(isa: Isa, x: Head, out: &mut [f32], ldo: usize) {
    let Head { q, k, v, ld, len, dh } = x;
    if len == 0 || dh == 0 {
        return;
    }
    let need = (len - 1) * ld + dh;
    assert!(q.len() >= need && k.len() >= need && v.len() >= need, "Q, K or V too short for {len} rows");
    assert!(ldo >= dh && out.len() >= (len - 1) * ldo + dh, "out too short for {len} rows of {dh} at stride {ldo}");
    SCRATCH.with_borrow_mut(|scratch| {
        if isa.has_bf16() {
            head_bf16(isa, Operands::Values(x), out, ldo, scratch)
        } else {
            head_f32(isa, x, out, ldo, scratch)
        }
    })
}

/// [`head`] on operands already in bf16; the CPU must have AVX-512 BF16 (`isa.has_bf16()`).
pub fn head_pairs(isa: Isa, x: PairedHead, out: &mut [f32], ldo: usize) {
    let Head { q, k, v, ld, len, dh } = x;
    assert!(isa.has_bf16(), "bf16 operands on a path without bf16 products ({isa:?})");
    assert!(dh.is_multiple_of(2), "a head of {dh} values is not whole pairs");
    if len == 0 || dh == 0 {
        return;
    }
    let need = (len - 1) * ld + dh / 2;
    assert!(q.len() >= need && k.len() >= need && v.len() >= need, "Q, K or V too short for {len} rows");
    assert!(ldo >= dh && out.len() >= (len - 1) * ldo + dh, "out too short for {len} rows of {dh} at stride {ldo}");
    SCRATCH.with_borrow_mut(|scratch| head_bf16(isa, Operands::Pairs(x), out, ldo, scratch))
}

/// A head's Q, K and V as [`head_bf16`] reads them.
#[derive(Clone, Copy)]
enum Operands<'a> {
    Values(Head<'a>),
    Pairs(PairedHead<'a>),
}

impl Operands<'_> {
    /// Tokens and the head's width.
    fn shape(self) -> (usize, usize) {
        match self {
            Self::Values(x) => (x.len, x.dh),
            Self::Pairs(x) => (x.len, x.dh),
        }
    }

    /// Row `r` of K (`key`) or Q as bf16 pairs.
    fn row(self, isa: Isa, key: bool, r: usize, out: &mut [u32]) {
        match self {
            Self::Values(x) => bf16::round_row(isa, &(if key { x.k } else { x.q })[r * x.ld..][..x.dh], out),
            Self::Pairs(x) => out.copy_from_slice(&(if key { x.k } else { x.q })[r * x.ld..][..x.dh / 2]),
        }
    }

    /// `out[c]` = the pair (V[2p][col + c], V[2p+1][col + c]), the second 0 past the last row.
    fn v_pairs(self, p: usize, col: usize, out: &mut [u32]) {
        let cols = out.len();
        match self {
            Self::Values(x) => {
                let first = &x.v[2 * p * x.ld + col..][..cols];
                match x.v.get((2 * p + 1) * x.ld + col..).filter(|_| 2 * p + 1 < x.len) {
                    Some(second) => bf16::pair_rows(first, &second[..cols], out),
                    None => bf16::pair_rows(first, &[0.0; bf16::NR][..cols], out),
                }
            }
            Self::Pairs(x) => {
                // `col` and `cols` are even (whole panels of an even width): whole words.
                let first = &x.v[2 * p * x.ld + col / 2..][..cols / 2];
                let second = x.v.get((2 * p + 1) * x.ld + col / 2..).filter(|_| 2 * p + 1 < x.len);
                for (i, two) in out.chunks_exact_mut(2).enumerate() {
                    let (a, b) = (first[i], second.map_or(0, |s| s[i]));
                    two[0] = (a & 0xffff) | (b << 16);
                    two[1] = (a >> 16) | (b & 0xffff_0000);
                }
            }
        }
    }
}

/// Drops the calling thread's buffers (a process falling idle calls it on every thread).
pub fn release_thread() {
    SCRATCH.take();
}

/// `buf` grown to at least `n` values (its old values stay: every user writes what it reads).
fn at_least<T: Copy + Default>(buf: &mut Vec<T>, n: usize) -> &mut [T] {
    if buf.len() < n {
        buf.resize(n, T::default());
    }
    &mut buf[..n]
}

/// [`at_least`], starting on a cache line: a tile's 64-byte rows then
/// straddle none (one that did cost the products 30–40 % of their rate).
fn aligned(buf: &mut Vec<u32>, n: usize) -> &mut [u32] {
    scratch::on_cache_line(at_least(buf, n + scratch::line_slack::<u32>()), n)
}

fn head_bf16(isa: Isa, x: Operands, out: &mut [f32], ldo: usize, s: &mut Scratch) {
    let (len, dh) = x.shape();
    let (mr, nr) = (bf16::MR, bf16::NR);
    let depth = dh.div_ceil(2);
    // Rows padded to whole tiles (the micro-kernel writes MR rows), keys to whole panels.
    let rows_pad = len.next_multiple_of(mr);
    let keys_pad = len.next_multiple_of(nr);
    let heads_pad = dh.next_multiple_of(nr);
    let key_pairs = len.div_ceil(2);
    // AMX tiles take the keys 16 pairs at a time: P's rows and V's panels are zero past the last key.
    let key_depth = if isa.has_amx() { key_pairs.next_multiple_of(amx::PAIRS) } else { key_pairs };

    let qs = aligned(&mut s.q, len * depth);
    for (r, row) in qs.chunks_exact_mut(depth).enumerate() {
        x.row(isa, false, r, row);
    }
    // K's rows as pairs (as Q's; in the probabilities' buffer, free until the softmax),
    // then panel j, word p, column c: word p of key j·NR + c.
    let k_rows = aligned(&mut s.p, len * depth);
    for (r, row) in k_rows.chunks_exact_mut(depth).enumerate() {
        x.row(isa, true, r, row);
    }
    let ks = aligned(&mut s.k, keys_pad * depth);
    for (j, panel) in ks.chunks_exact_mut(depth * nr).enumerate() {
        for c in 0..nr {
            let key = j * nr + c;
            for p in 0..depth {
                panel[p * nr + c] = if key < len { k_rows[key * depth + p] } else { 0 };
            }
        }
    }
    let scores = at_least(&mut s.scores, rows_pad * keys_pad);
    product(isa, qs, depth, len, ks, scores, keys_pad);
    // exp(score - max) over the real keys, as pairs of keys (an odd last one pairs with 0).
    let ps = aligned(&mut s.p, len * key_depth);
    let inv = at_least(&mut s.inv, len);
    for (r, (p_row, inv)) in ps.chunks_exact_mut(key_depth).zip(inv.iter_mut()).enumerate() {
        let (p_row, padding) = p_row.split_at_mut(key_pairs);
        *inv = 1.0 / exp_pairs(isa, &scores[r * keys_pad..][..len], p_row);
        padding.fill(0);
    }
    // Panel j, word p, column c: the pair (V[2p][j·NR + c], V[2p+1][j·NR + c]).
    let vs = aligned(&mut s.v, (heads_pad / nr) * key_depth * nr);
    if dh % nr != 0 {
        // The last panel's columns past the head's width are read by the kernel: zero, not stale.
        vs.fill(0);
    }
    for (j, panel) in vs.chunks_exact_mut(key_depth * nr).enumerate() {
        let cols = nr.min(dh - j * nr);
        let (panel, padding) = panel.split_at_mut(key_pairs * nr);
        padding.fill(0);
        for (p, words) in panel.chunks_exact_mut(nr).enumerate() {
            x.v_pairs(p, j * nr, &mut words[..cols]);
        }
    }
    let o = at_least(&mut s.out, rows_pad * heads_pad);
    product(isa, ps, key_depth, len, vs, o, heads_pad);
    for (r, &inv) in inv.iter().enumerate() {
        out[r * ldo..][..dh].iter_mut().zip(&o[r * heads_pad..][..dh]).for_each(|(out, o)| *out = o * inv);
    }
}

/// `out` = exp(`row` − its maximum) as bfloat16 pairs (`row.len().div_ceil(2)`
/// words, an odd last value paired with 0); returns the sum of those
/// exponentials, at least 1 (the maximum's own).
fn exp_pairs(isa: Isa, row: &[f32], out: &mut [u32]) -> f32 {
    assert!(!row.is_empty() && out.len() >= row.len().div_ceil(2), "{} words for {} values", out.len(), row.len());
    #[cfg(target_arch = "x86_64")]
    if isa.has_bf16() {
        // SAFETY: `has_bf16` is only set after the CPU was seen to have AVX-512 F, BW and
        // BF16; the assert above bounds every store.
        return unsafe { avx512::exp_pairs(row, out) };
    }
    let _ = isa;
    let top = rows::max(row);
    let mut total = 0.0;
    for (two, word) in row.chunks(2).zip(out.iter_mut()) {
        let e = [rows::exp(two[0] - top), two.get(1).map_or(0.0, |&v| rows::exp(v - top))];
        total += e[0] + e[1];
        *word = bf16::pair(&e);
    }
    total
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// [`super::exp_pairs`]: the maximum in one pass, then 32 exponentials a
    /// step, summed and rounded to bf16 pairs in registers.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and BF16; `row` must not be empty and
    /// `out` must hold `row.len().div_ceil(2)` words.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn exp_pairs(row: &[f32], out: &mut [u32]) -> f32 {
        let n = row.len();
        // The first `k` of 16 lanes (k ≤ 16).
        let lanes = |k: usize| -> __mmask16 { if k >= 16 { !0 } else { (1u16 << k) - 1 } };
        // SAFETY (whole body): every load and store is masked to `row[..n]` and
        // `out[..n.div_ceil(2)]`; the transmute reinterprets 32 bf16 values as 512 bits.
        unsafe {
            let p = row.as_ptr();
            let mut m = _mm512_set1_ps(f32::NEG_INFINITY);
            for i in (0..n).step_by(16) {
                let k = lanes(n - i);
                m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, p.add(i)));
            }
            let top = _mm512_set1_ps(_mm512_reduce_max_ps(m));
            let mut total = _mm512_setzero_ps();
            for i in (0..n).step_by(32) {
                let (k0, k1) = (lanes(n - i), lanes((n - i).saturating_sub(16)));
                let lo = _mm512_maskz_mov_ps(k0, exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(k0, p.add(i)), top)));
                let hi = _mm512_maskz_mov_ps(k1, exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(k1, p.add(i + 16)), top)));
                total = _mm512_add_ps(total, _mm512_add_ps(lo, hi));
                // The second operand fills the low half: memory order.
                let words: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
                _mm512_mask_storeu_epi32(out.as_mut_ptr().add(i / 2).cast(), lanes((n - i).div_ceil(2)), words);
            }
            _mm512_reduce_add_ps(total)
        }
    }

    /// `rows::exp` on 16 lanes at once, for x ≤ 0: the same reduction and
    /// polynomial, with 2^n applied by `vscalefps` (−87 and below give ~0).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn exp(x: __m512) -> __m512 {
        let x = _mm512_max_ps(x, _mm512_set1_ps(-87.0));
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
            x,
            _mm512_set1_ps(std::f32::consts::LOG2_E),
        ));
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_359_4), x);
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.121_944_4e-4), r);
        let mut q = _mm512_set1_ps(1.987_569_1e-4);
        for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
            q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(c));
        }
        // e^r = q·r² + r + 1
        let e = _mm512_fmadd_ps(_mm512_mul_ps(q, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0)));
        _mm512_scalef_ps(e, n)
    }
}

/// `C = A · B` on the bf16 micro-kernel: A `len` rows of `depth` pair words,
/// B panels of `depth` × [`bf16::NR`] words, C at stride `ldc` with room for
/// `len` rounded up to whole tiles of [`bf16::MR`] rows.
fn product(isa: Isa, a: &[u32], depth: usize, len: usize, panels: &[u32], c: &mut [f32], ldc: usize) {
    let (mr, nr) = (bf16::MR, bf16::NR);
    if isa.has_amx() && depth.is_multiple_of(amx::PAIRS) {
        let cols = panels.len() / depth;
        return amx::block(a, depth, panels, depth, cols, &mut c[..(len - 1) * ldc + cols], ldc);
    }
    for i in (0..len).step_by(mr) {
        let rows = mr.min(len - i);
        for (j, panel) in panels.chunks_exact(depth * nr).enumerate() {
            bf16::tile(isa, depth, &a[i * depth..], depth, rows, panel, &mut c[i * ldc + j * nr..], ldc, false);
        }
    }
}

fn head_f32(isa: Isa, x: Head, out: &mut [f32], ldo: usize, s: &mut Scratch) {
    let Head { q, k, v, ld, len, dh } = x;
    // scores = Q · Kᵀ, then a softmax per row; every score is written by the product.
    s.packed.repack_transposed(k, len, dh, ld);
    let scores = at_least(&mut s.scores, len * len);
    gemm::gemm_serial(isa, q, ld, &s.packed, scores, len, Epilogue::None);
    scores.chunks_exact_mut(len).for_each(|row| rows::softmax(isa, row));
    s.packed.repack_rows(v, len, dh, ld);
    // Straight into `out`: the f32 product writes exactly `len` rows of `dh` at any stride.
    gemm::gemm_serial(isa, scores, len, &s.packed, &mut out[..(len - 1) * ldo + dh], ldo, Epilogue::None);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// softmax(Q · Kᵀ) · V in f64.
    fn reference(q: &[f32], k: &[f32], v: &[f32], ld: usize, len: usize, dh: usize) -> Vec<f64> {
        let mut out = vec![0.0; len * dh];
        for i in 0..len {
            let scores: Vec<f64> =
                (0..len).map(|j| (0..dh).map(|d| q[i * ld + d] as f64 * k[j * ld + d] as f64).sum()).collect();
            let top = scores.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
            let total: f64 = e.iter().sum();
            for d in 0..dh {
                out[i * dh + d] = (0..len).map(|j| e[j] / total * v[j * ld + d] as f64).sum();
            }
        }
        out
    }

    #[test]
    fn operands_in_bf16_give_what_the_same_values_in_f32_give() {
        // Q, K and V rounded by the caller (as a product's bf16 output) or by the
        // head itself: the same bits in, the same result out; odd lengths (a last
        // row of V without a pair), two panels of a wide head.
        for isa in Isa::available().into_iter().filter(|isa| isa.has_bf16()) {
            for &(len, dh) in &[(1, 32), (13, 32), (97, 64), (240, 32)] {
                let ld = 3 * dh + 2;
                let all = crate::sample::uniform(len * ld, (len + dh) as u64, 2.0);
                let mut pairs = vec![0u32; len * ld / 2];
                for (row, words) in all.chunks_exact(ld).zip(pairs.chunks_exact_mut(ld / 2)) {
                    bf16::round_row(isa, row, words);
                }
                let mut want = vec![0.0; len * dh];
                head(isa, Head { q: &all, k: &all[dh..], v: &all[2 * dh..], ld, len, dh }, &mut want, dh);
                let mut got = vec![f32::NAN; len * dh];
                let (q, w) = (&pairs[..], ld / 2);
                head_pairs(isa, PairedHead { q, k: &q[dh / 2..], v: &q[dh..], ld: w, len, dh }, &mut got, dh);
                assert!(got == want, "{isa:?} len {len} dh {dh}");
            }
        }
    }

    #[test]
    fn every_path_matches_the_reference_on_awkward_lengths() {
        // Lengths around the tiles (12 rows, 32 keys) and odd ones (a half pair),
        // head widths of the encoder's models and an odd one, the thread's buffers reused throughout.
        for isa in Isa::available() {
            for &(len, dh) in &[(1, 32), (2, 32), (11, 32), (13, 33), (32, 64), (33, 32), (97, 32), (256, 32), (7, 5)] {
                let ld = 3 * dh + 1;
                let all = crate::sample::uniform(len * ld, (len * dh) as u64, 2.0);
                let (q, k, v) = (&all[..], &all[dh..], &all[2 * dh..]);
                // The bf16 path rounds Q, K and V's values: the reference takes them rounded.
                let rounded: Vec<f32> = all.iter().map(|&x| bf16::from_bf16(bf16::to_bf16(x))).collect();
                let exact = if isa.has_bf16() { &rounded } else { &all };
                let want = reference(exact, &exact[dh..], &exact[2 * dh..], ld, len, dh);
                let ldo = dh + 3;
                let mut out = vec![f32::NAN; (len - 1) * ldo + dh];
                head(isa, Head { q, k, v, ld, len, dh }, &mut out, ldo);
                // What is left is the probabilities' rounding: 2^-9 of each, |v| ≤ 2.
                let tolerance = if isa.has_bf16() { 0.01 } else { 1e-4 };
                for i in 0..len {
                    for d in 0..dh {
                        let (got, want) = (out[i * ldo + d] as f64, want[i * dh + d]);
                        assert!(
                            (got - want).abs() < tolerance,
                            "{isa:?} len {len} dh {dh} at {i},{d}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
