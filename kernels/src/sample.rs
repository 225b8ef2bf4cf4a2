//! Deterministic inputs for the kernels' tests and benchmarks, and the
//! products' shared test cases (not for production use).

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

/// `n` values in `-1..1`, the same for the same `seed`: the products' inputs.
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    uniform(n, seed, 1.0)
}

#[cfg(test)]
pub(crate) use cases::*;

/// What the tests of the three products (f32, bf16, int8) share.
#[cfg(test)]
mod cases {
    use super::random;
    use crate::Isa;
    use crate::gemm::{self, Epilogue};

    /// Runs `test` on every path, on pools of 1, 2 and 5 threads (serial,
    /// row-split and column-split products), at every `(m, k, n)` of `shapes`.
    pub(crate) fn every_path_pool_and_shape(
        shapes: &[(usize, usize, usize)],
        mut test: impl FnMut(Isa, &rayon::ThreadPool, usize, usize, usize),
    ) {
        let pools = [1, 2, 5].map(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap());
        for isa in Isa::available() {
            for pool in &pools {
                for &(m, k, n) in shapes {
                    test(isa, pool, m, k, n);
                }
            }
        }
    }

    /// A product's inputs at one shape, seeded by it: `m` rows of A at a
    /// stride that is not the width (`k + 3`), `n` rows of W and `n` biases.
    pub(crate) struct Case {
        pub(crate) m: usize,
        pub(crate) k: usize,
        pub(crate) n: usize,
        pub(crate) lda: usize,
        pub(crate) a: Vec<f32>,
        pub(crate) w: Vec<f32>,
        pub(crate) bias: Vec<f32>,
    }

    impl Case {
        /// The inputs for `m × k` times `(n × k)ᵀ`.
        pub(crate) fn new(m: usize, k: usize, n: usize) -> Self {
            let lda = k + 3;
            Self { m, k, n, lda, a: random(m * lda, (m * k) as u64), w: random(n * k, n as u64), bias: random(n, 5) }
        }

        /// C's stride: one column past each row's last, which is not C's.
        pub(crate) fn ldc(&self) -> usize {
            self.n + 1
        }

        /// `A · Wᵀ` in f64 with each factor through `round` first: what a
        /// product computes, up to the order of its f32 sums.
        pub(crate) fn reference(&self, round: impl Fn(f32) -> f64) -> Vec<f64> {
            let (k, n) = (self.k, self.n);
            let mut c = vec![0.0; self.m * n];
            for i in 0..self.m {
                for j in 0..n {
                    c[i * n + j] = (0..k).map(|p| round(self.a[i * self.lda + p]) * round(self.w[j * k + p])).sum();
                }
            }
            c
        }

        /// C as `product` writes it given C and [`Case::ldc`], NaN where it writes nothing.
        pub(crate) fn product(&self, product: impl FnOnce(&mut [f32], usize)) -> Vec<f32> {
            let mut c = vec![f32::NAN; (self.m - 1) * self.ldc() + self.n];
            product(&mut c, self.ldc());
            c
        }

        /// Every value of `c` (from [`Case::product`]) lies within
        /// `tolerance · √k` of `want` (from [`Case::reference`]) plus its bias.
        pub(crate) fn check(&self, isa: Isa, c: &[f32], want: &[f64], tolerance: f64) {
            let (m, k, n) = (self.m, self.k, self.n);
            for i in 0..m {
                for j in 0..n {
                    let (got, want) = (c[i * self.ldc() + j] as f64, want[i * n + j] + self.bias[j] as f64);
                    assert!((got - want).abs() < tolerance * (k as f64).sqrt(), "{isa:?} {m}x{k}x{n} at {i},{j}");
                }
            }
        }
    }

    /// `A · Wᵀ` (`m × k` by `n × k`, both dense) plus `epilogue` in f32 on
    /// the portable path: what a lower-precision product is compared with.
    pub(crate) fn f32_product(a: &[f32], m: usize, k: usize, w: &[f32], n: usize, epilogue: Epilogue) -> Vec<f32> {
        let mut c = vec![0.0; m * n];
        gemm::gemm(Isa::Portable, a, k, &gemm::Packed::transposed(w, n, k, k), &mut c, n, epilogue);
        c
    }

    /// The largest difference between two products' values.
    pub(crate) fn worst(x: &[f32], y: &[f32]) -> f32 {
        x.iter().zip(y).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max)
    }
}
